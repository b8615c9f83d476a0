"""The real image: the project's ``Containerfile`` built with podman and run (no registry; see
:mod:`tests.real.podman_image`), checked for what the DaemonSet relies on."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from mcd import __version__
from mcd.cli import cli
from tests.real import podman_image

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
# one worker builds the image once for the whole module (make unit spreads tests over workers)
pytestmark = pytest.mark.xdist_group("real-image")


@pytest.fixture(scope="module")
def image() -> Iterator[str]:
    why = podman_image.unavailable()
    if why:
        pytest.skip(f"real image: {why}")
    tag = f"localhost/mcd-test:{uuid.uuid4().hex[:8]}"
    podman_image.build(tag)
    try:
        yield tag
    finally:
        podman_image.podman("rmi", "--force", tag, check=False)


def daemonset_container() -> dict[str, object]:
    docs = yaml.safe_load_all((REPO / "daemonset/base/03-daemonset.yaml").read_text())
    ds = next(d for d in docs if d and d["kind"] == "DaemonSet")
    container: dict[str, object] = ds["spec"]["template"]["spec"]["containers"][0]
    return container


def test_mcd_help_and_version_in_the_image(image: str) -> None:
    result = podman_image.run(image, "--help")
    assert result.returncode == 0, result.stderr
    for command in ("start", "once-from", "plan", "validate", "pivot"):
        assert command in result.stdout
    version = podman_image.run(image, "--version")
    assert version.returncode == 0 and __version__ in version.stdout


def test_mcd_plan_on_the_examples_inside_the_image_matches_the_checkout(image: str) -> None:
    args = ["plan", "/examples/rendered-worker-1.yaml", "/examples/rendered-worker-2.yaml",
            "--policy", "/examples/machineconfiguration.yaml", "--json"]  # fmt: skip
    inside = podman_image.run(image, *args, volumes=(f"{EXAMPLES}:/examples:ro",))
    assert inside.returncode == 0, inside.stderr
    here = CliRunner().invoke(cli, [a.replace("/examples", str(EXAMPLES)) for a in args])
    assert here.exit_code == 0, here.output
    # the plan names its policy file: the same file, seen at its path in each place
    assert json.loads(inside.stdout) == json.loads(here.output.replace(str(EXAMPLES), "/examples"))


def test_entrypoint_default_command_and_user_are_what_the_daemonset_expects(image: str) -> None:
    (info,) = json.loads(podman_image.podman("image", "inspect", image).stdout)
    config = info["Config"]
    assert config["Entrypoint"] == ["mcd"]
    assert config["Cmd"] == ["start"]
    assert config.get("User", "") in ("", "root", "0")  # privileged agent: root in the pod
    container = daemonset_container()
    assert "command" not in container  # the DaemonSet gives args to the entrypoint
    args = [str(a) for a in container["args"]]  # type: ignore[attr-defined]
    result = podman_image.run(image, args[0], "--help")
    assert result.returncode == 0, result.stderr
    for option in (a.split("=", 1)[0] for a in args[1:]):
        assert option in result.stdout, f"the image's mcd {args[0]} has no {option}"


def test_runtime_stage_has_the_tools_mcd_calls_and_no_compiler(image: str) -> None:
    script = (
        "for t in gcc cc c++ x86_64-linux-gnu-gcc pkg-config; do command -v $t; done; "
        "test -e /usr/include/systemd/sd-journal.h && echo libsystemd-dev; "
        "for t in mcd chroot usermod nsenter; do command -v $t >/dev/null || echo missing $t; done; "
        "python3 -c 'import systemd.journal, dbus_fast, kubernetes' || echo broken imports; "
        "test -d /wheels && echo wheels left; exit 0"
    )
    result = podman_image.run(image, "-c", script, entrypoint="/bin/sh")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "", f"runtime stage carries: {result.stdout.split()}"
