"""No surprise writes to the machine a command runs on (issue 28): a command that writes a
root, given no ``--root`` on a host that shows no sign of being a node mcd or the MCO manages,
refuses in one line naming ``--root /``; the shipped units say which root they mean.

The refusals are tested with the signs looked for made absent (nothing is written on a
refusal); nothing here runs a command that would write this machine's own ``/``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from mcd.cli import cli, common

REPO = Path(__file__).resolve().parents[2]
EX2 = str(REPO / "examples/rendered-worker-2.yaml")
REFUSAL = (
    "error: refusing to write this machine's own root /: it shows no sign of being a node "
    "mcd or the MCO manages (no /etc/machine-config-daemon/, /run/ostree-booted or kubelet); "
    "pass --root / to mean it, or --root DIR for another root"
)

WRITERS = [
    ["once-from", EX2],
    ["once-from", EX2, "--skip-reboot", "--try", "10m"],
    ["pivot", "quay.io/os@sha256:1"],
    ["restore"],
    ["recover", "--finish"],
    ["recover", "--abandon"],
    ["recover", "--current", EX2],
    ["confirm"],
    ["try-revert", "--now"],
]


@pytest.fixture
def plain_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """This machine seen as a plain host (none of the signs), whatever it really has."""
    monkeypatch.setattr(common, "node_signs", lambda host="/": [])


@pytest.mark.parametrize("argv", WRITERS, ids=" ".join)
@pytest.mark.usefixtures("plain_host")
def test_a_writer_without_root_on_a_plain_host_refuses_in_one_line(argv: list[str]) -> None:
    result = CliRunner().invoke(cli, argv, env={"NO_COLOR": "1"}, prog_name="mcd")
    assert result.exit_code == 1, result.output
    assert result.stderr == REFUSAL + "\n"
    assert result.stdout == ""


@pytest.mark.usefixtures("plain_host")
def test_reading_commands_still_default_to_this_machine() -> None:
    result = CliRunner().invoke(cli, ["recover"], env={"NO_COLOR": "1"})
    assert "refusing" not in result.stderr
    assert result.stdout.startswith("journal: ")


def test_given_a_root_nothing_is_refused(tmp_path: Path, plain_host: None) -> None:
    result = CliRunner().invoke(cli, ["once-from", EX2, "--root", str(tmp_path / "r"),
                                      "--skip-reboot"])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert (tmp_path / "r/etc/machine-config-daemon/currentconfig").is_file()


@pytest.mark.parametrize(
    "sign",
    ["etc/machine-config-daemon", "run/ostree-booted", "var/lib/kubelet",
     "etc/kubernetes/kubelet.conf", "usr/bin/kubelet"],
)  # fmt: skip
def test_each_sign_of_a_node_is_seen(tmp_path: Path, sign: str) -> None:
    assert common.node_signs(str(tmp_path)) == []
    (tmp_path / sign).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / sign).symlink_to("/nonexistent")  # a dangling link counts: lexists
    assert common.node_signs(str(tmp_path)) == ["/" + sign]


def test_on_a_node_no_root_means_slash(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(common, "node_signs", lambda host="/": ["/run/ostree-booted"])
    assert common.own_root() == Path("/")


def test_the_shipped_units_name_their_root() -> None:
    for unit in sorted((REPO / "systemd").glob("*.service")):
        for line in unit.read_text().splitlines():
            if line.startswith("ExecStart=") and re.search(r"\bmcd ", line):
                # --root everywhere (--root-mount is start's and firstboot's deprecated alias)
                assert re.search(r"--root[ =]/(\s|$)", line), (unit.name, line)
    docs = list(yaml.safe_load_all((REPO / "daemonset/base/03-daemonset.yaml").read_text()))
    ds = next(d for d in docs if d and d.get("kind") == "DaemonSet")
    containers = ds["spec"]["template"]["spec"]["containers"]
    agent = next(c for c in containers if "start" in c.get("args", []))
    assert {"--root=/rootfs", "--root-mount=/rootfs"} & set(agent["args"])
