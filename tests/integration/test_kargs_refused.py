"""A kernel argument the boot loader would drop or misparse (issue 41, 8) is refused by the
one gate before anything is written: on a GRUB node no drop-in and no ``update-grub``; on any
root ``once-from`` exits 2 with one line naming ``spec.kernelArguments[i]``, and the root is
byte for byte what it was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcd.agent.update.transaction import UpdateError
from mcd.cli import cli
from mcd.model.osupdate.bootargs import GRUB_DROPIN, grub_dropin
from tests.builders import file_entry, mc_doc
from tests.integration.applying import apply, current
from tests.integration.helpers.tree import differences, snapshot
from tests.integration.test_bootloader_kargs import DEBIAN, GrubRunner, _node

BAD = [
    ("#quiet", '"#quiet" starts with #'),
    ('acpi_osi="Windows', "unbalanced double quote"),
    ("console=$tty", '"console=$tty" has $'),
]


@pytest.fixture
def debian(node_root: Path) -> Path:
    """A Debian root with GRUB (``/etc/default/grub``, ``update-grub``)."""
    for path, text in {
        "etc/os-release": DEBIAN, "etc/default/grub": 'GRUB_CMDLINE_LINUX=""\n',
        "usr/sbin/update-grub": "", "proc/cmdline": "BOOT_IMAGE=/vmlinuz root=/dev/vda1 ro\n",
    }.items():  # fmt: skip
        (node_root / path).parent.mkdir(parents=True, exist_ok=True)
        (node_root / path).write_text(text)
    return node_root


@pytest.mark.parametrize(("karg", "why"), BAD)
def test_on_a_grub_node_nothing_is_written_and_update_grub_never_runs(
    debian: Path, karg: str, why: str
) -> None:
    runner = GrubRunner()
    node = _node(debian, runner)
    apply(debian, node, "rendered-1", kernelArguments=["nosmt"])
    before, calls = snapshot(debian), len(runner.calls)
    with pytest.raises(UpdateError) as e:
        apply(debian, node, "rendered-2", kernelArguments=["nosmt", karg])
    assert "spec.kernelArguments[1]: invalid kernel argument " in str(e.value)
    assert why in str(e.value)
    assert differences(before, snapshot(debian)) == []
    assert len(runner.calls) == calls
    assert current(debian) == "rendered-1"
    assert (debian / GRUB_DROPIN.lstrip("/")).read_bytes() == grub_dropin(["nosmt"])


@pytest.mark.parametrize(("karg", "why"), BAD)
def test_once_from_refuses_in_one_line_exit_2_and_changes_nothing(
    tmp_path: Path, karg: str, why: str
) -> None:
    root = tmp_path / "root"
    first, second = tmp_path / "rendered-1.json", tmp_path / "rendered-2.json"
    first.write_text(json.dumps(mc_doc("rendered-1", files=[file_entry("/etc/motd", "1\n")])))
    second.write_text(json.dumps(mc_doc(
        "rendered-2", files=[file_entry("/etc/motd", "2\n")], kernelArguments=["nosmt", karg]
    )))  # fmt: skip
    args = ["--root", str(root), "--skip-reboot"]
    assert CliRunner().invoke(cli, ["once-from", str(first), *args]).exit_code == 0
    before = snapshot(root)
    result = CliRunner().invoke(cli, ["once-from", str(second), *args], env={"NO_COLOR": "1"})
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: can't reconcile config ")
    assert "spec.kernelArguments[1]: invalid kernel argument " in lines[0] and why in lines[0]
    assert differences(before, snapshot(root)) == []
    assert (root / "etc/motd").read_text() == "1\n"
