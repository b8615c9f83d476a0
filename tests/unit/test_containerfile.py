"""The Containerfile stays in step with ``pyproject.toml`` (no container engine runs here):
same Python version, the wheel built from this project, the ``mcd`` entry point, ``start`` by
default, and no compiler in the runtime stage."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

from click.testing import CliRunner

from mcd.cli import cli

REPO = Path(__file__).resolve().parents[2]


def stages() -> list[list[str]]:
    text = (REPO / "Containerfile").read_text().replace("\\\n", " ")
    lines = [
        line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")
    ]
    out: list[list[str]] = []
    for line in lines:
        if line.startswith("FROM "):
            out.append([])
        if out:
            out[-1].append(line)
    return out


def test_python_version_matches_requires_python() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    minimum = re.match(r">=\s*(\d+\.\d+)", project["requires-python"])
    assert minimum
    arg = re.search(r"^ARG PYTHON_VERSION=(\S+)$", (REPO / "Containerfile").read_text(), re.M)
    assert arg and arg.group(1) == minimum.group(1)
    assert all("python:${PYTHON_VERSION}-slim" in s[0] for s in stages())


def test_two_stages_wheel_built_from_this_project_and_no_compiler_at_runtime() -> None:
    build, runtime = stages()
    assert "AS build" in build[0]
    assert (
        "COPY pyproject.toml README.md ./" in build
        and "RUN pip wheel --no-cache-dir --wheel-dir /wheels ." in build
    )
    assert "COPY --from=build /wheels /wheels" in runtime
    runtime_text = " ".join(runtime)
    for tool in ("gcc", "libsystemd-dev", "pkg-config", "build-essential"):
        assert tool not in runtime_text
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert f"--find-links=/wheels {project['name']}" in runtime_text


def test_entrypoint_is_the_console_script_and_start_is_the_default() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    text = (REPO / "Containerfile").read_text()
    entry = json.loads(re.search(r"^ENTRYPOINT (\[.*\])$", text, re.M).group(1))  # type: ignore[union-attr]
    cmd = json.loads(re.search(r"^CMD (\[.*\])$", text, re.M).group(1))  # type: ignore[union-attr]
    assert entry == ["mcd"] and "mcd" in project["scripts"]
    assert project["scripts"]["mcd"] == "mcd.cli:main"
    assert cmd == ["start"]
    assert CliRunner().invoke(cli, [*cmd, "--help"]).exit_code == 0
