"""The host units in ``systemd/`` pass ``systemd-analyze verify`` (issue 7).

Verified in a temp root holding the machine's own system units (for the
targets they hook into) and an executable ``/usr/local/bin/mcd`` that runs
this checkout's mcd: every command line must name a real subcommand.
"""

from __future__ import annotations

import configparser
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcd.cli import cli

REPO = Path(__file__).resolve().parents[2]
UNITS = sorted((REPO / "systemd").glob("*.service"))
SYSTEM_UNITS = next(
    (p for p in (Path("/usr/lib/systemd/system"), Path("/lib/systemd/system")) if p.is_dir()), None
)


@pytest.fixture(scope="module")
def unit_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("systemd-analyze") is None or SYSTEM_UNITS is None:
        pytest.fail("systemd-analyze is missing: run scripts/setup.sh (Debian package systemd)")
    root = tmp_path_factory.mktemp("unitroot")
    (root / "usr/local/bin").mkdir(parents=True)
    mcd = root / "usr/local/bin/mcd"
    mcd.write_text(f'#!/bin/sh\nexec {sys.executable} -m mcd "$@"\n')
    mcd.chmod(0o755)
    shutil.copytree(SYSTEM_UNITS, root / "usr/lib/systemd/system", symlinks=True)
    (root / "etc/systemd/system").mkdir(parents=True)
    for unit in UNITS:
        shutil.copy(unit, root / "etc/systemd/system" / unit.name)
    return root


@pytest.mark.parametrize("unit", UNITS, ids=lambda p: p.name)
def test_systemd_analyze_verify_is_clean(unit_root: Path, unit: Path) -> None:
    result = subprocess.run(
        ["systemd-analyze", "verify", f"--root={unit_root}", "--man=no", "--generators=no",
         str(unit_root / "etc/systemd/system" / unit.name)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout + result.stderr == ""  # not even a warning (unknown keys print one)


@pytest.mark.parametrize("unit", UNITS, ids=lambda p: p.name)
def test_exec_start_names_a_real_subcommand_and_options(unit: Path) -> None:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read(unit)
    argv = shlex.split(parser["Service"]["ExecStart"])
    assert argv[0] == "/usr/local/bin/mcd"
    result = CliRunner().invoke(cli, [argv[1], "--help"])
    assert result.exit_code == 0, result.output
    for option in (a.split("=")[0] for a in argv[2:] if a.startswith("--")):
        assert option in result.output, f"{unit.name}: {argv[1]} has no option {option}"


def test_agent_unit_is_notify_with_room_for_a_deferred_sigterm() -> None:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.read(REPO / "systemd/mcd.service")
    service = parser["Service"]
    assert service["Type"] == "notify" and service["Restart"] == "always"
    assert int(service["TimeoutStopSec"]) >= 600
