"""Kernel arguments on a Debian root through GRUB's drop-in (issue 34), on a temp root: what is
on disk, the command run, the rollback when ``update-grub`` fails, the refusal of fields the
host cannot apply, and the check after the boot (``/proc/cmdline``). GRUB's own tools run
for real in ``tests/real/test_bootloader.py``; here a recording runner stands in for them."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from mcd.agent.boot.firstboot import ENCAPSULATED, firstboot_complete
from mcd.agent.bootloader.postboot import kernel_arguments_problem
from mcd.agent.update.handles import Node
from mcd.agent.update.journal import JOURNAL
from mcd.agent.update.transaction import Outcome, UpdateError
from mcd.cli import cli
from mcd.host.effects import HostEffects
from mcd.host.rootfs import Root
from mcd.host.runner import CommandError, CommandResult, Runner
from mcd.model.machineconfig import load_machine_config
from mcd.model.osupdate.bootargs import GRUB_DROPIN, grub_dropin
from mcd.model.vocabulary import CURRENT_CONFIG_PATH
from tests.builders import mc_doc
from tests.e2e.harness import make_root
from tests.fakes.memory_systemd import MemorySystemd
from tests.integration.applying import apply, current

DEBIAN = 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nID=debian\nVERSION_ID="12"\n'


class GrubRunner(Runner):
    """Records ``chroot ROOT update-grub``; fails it ``fail`` times; anything else runs."""

    def __init__(self, fail: int = 0) -> None:
        super().__init__()
        self.calls: list[list[str]] = []
        self.fail = fail

    def run(
        self,
        argv: Sequence[str],
        *,
        check: bool = True,
        secret: Sequence[int] = (),
        timeout: float | None = None,
    ) -> CommandResult:
        if "update-grub" not in argv:
            return super().run(argv, check=check, secret=secret, timeout=timeout)
        self.calls.append(list(argv))
        if self.fail:
            self.fail -= 1
            result = CommandResult(tuple(argv), 1, "", "/boot/grub/grub.cfg.new: No space left")
            raise CommandError(" ".join(argv), result, "No space left on device: exit status 1")
        return CommandResult(tuple(argv), 0, "", "")


@pytest.fixture
def debian(node_root: Path) -> Path:
    for path, text in {
        "etc/os-release": DEBIAN, "etc/default/grub": 'GRUB_CMDLINE_LINUX=""\n',
        "usr/sbin/update-grub": "", "proc/cmdline": "BOOT_IMAGE=/vmlinuz root=/dev/vda1 ro\n",
    }.items():  # fmt: skip
        (node_root / path).parent.mkdir(parents=True, exist_ok=True)
        (node_root / path).write_text(text)
    return node_root


def _node(root: Path, runner: Runner) -> Node:
    return Node(Root(root), HostEffects(Root(root), MemorySystemd(root), runner))


def test_the_drop_in_holds_the_configs_arguments_and_update_grub_runs_in_the_root(
    debian: Path,
) -> None:
    runner = GrubRunner()
    node = _node(debian, runner)
    assert node.support().kernel_arguments == "grub"
    assert apply(debian, node, "rendered-1", kernelArguments=["nosmt", "a=b c"]) is (
        Outcome.REBOOT_PENDING
    )
    dropin = debian / GRUB_DROPIN.lstrip("/")
    assert dropin.read_bytes() == grub_dropin(["nosmt", "a=b c"])
    assert oct(dropin.stat().st_mode & 0o777) == "0o644"
    assert runner.calls == [["chroot", str(debian), "update-grub"]]
    apply(debian, node, "rendered-2")  # no kernel arguments: the drop-in goes
    assert not dropin.exists()
    assert len(runner.calls) == 2


def test_a_failed_update_grub_rolls_back_to_the_old_drop_in_and_says_which_command(
    debian: Path,
) -> None:
    node = _node(debian, GrubRunner())
    apply(debian, node, "rendered-1", kernelArguments=["nosmt"])
    failing = GrubRunner(fail=1)
    node = _node(debian, failing)
    with pytest.raises(UpdateError) as e:
        apply(debian, node, "rendered-2", kernelArguments=["mitigations=off"])
    assert "updating kernel arguments: error running chroot" in str(e.value)
    assert "update-grub" in str(e.value) and "exit status 1" in str(e.value)
    # the rollback wrote the old drop-in and ran update-grub again on it
    assert (debian / GRUB_DROPIN.lstrip("/")).read_bytes() == grub_dropin(["nosmt"])
    assert len(failing.calls) == 2
    assert current(debian) == "rendered-1"
    assert (debian / "etc/motd").read_text() == "rendered-1\n"
    assert not (debian / JOURNAL.lstrip("/")).exists()


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"kernelType": "realtime"}, "spec.kernelType"),
        ({"extensions": ["usbguard"]}, "spec.extensions"),
        ({"osImageURL": "quay.io/example/os@sha256:" + "a" * 64}, "spec.osImageURL"),
    ],
)
def test_fields_the_host_cannot_apply_are_refused_before_anything_is_written(
    debian: Path, spec: dict[str, Any], field: str
) -> None:
    runner = GrubRunner()
    node = _node(debian, runner)
    apply(debian, node, "rendered-1", kernelArguments=["nosmt"])
    with pytest.raises(UpdateError) as e:
        apply(debian, node, "rendered-2", kernelArguments=["quiet"], **spec)
    assert f"cannot apply rendered-2 on this node (Debian GNU/Linux 12 (bookworm)): {field}" in str(
        e.value
    )
    assert current(debian) == "rendered-1"
    assert (debian / "etc/motd").read_text() == "rendered-1\n"
    assert (debian / GRUB_DROPIN.lstrip("/")).read_bytes() == grub_dropin(["nosmt"])
    assert len(runner.calls) == 1  # no update-grub for the refused update


def test_after_the_boot_the_running_kernel_must_carry_the_arguments(debian: Path) -> None:
    node = _node(debian, GrubRunner())
    apply(debian, node, "rendered-1", kernelArguments=["nosmt", "a=b"])
    mc = load_machine_config((debian / CURRENT_CONFIG_PATH.lstrip("/")).read_bytes())
    # the boot loader did not take it: the booted command line lacks them
    assert kernel_arguments_problem(node, mc) == "missing expected kernel arguments: [nosmt a=b]"
    (debian / "proc/cmdline").write_text("BOOT_IMAGE=/vmlinuz root=/dev/vda1 ro nosmt a=b\n")
    assert kernel_arguments_problem(node, mc) == ""
    dropin = debian / GRUB_DROPIN.lstrip("/")
    dropin.write_text(dropin.read_text() + "GRUB_CMDLINE_LINUX=\n")  # a hand edit
    assert kernel_arguments_problem(node, mc) == f'content mismatch for file "{GRUB_DROPIN}"'


def test_firstboot_puts_the_configs_arguments_into_grub_once(debian: Path) -> None:
    runner = GrubRunner()
    node = _node(debian, runner)
    encapsulated = debian / ENCAPSULATED.lstrip("/")
    doc = mc_doc("rendered-1", kernelArguments=["nosmt"])
    encapsulated.write_text(json.dumps(doc))
    assert firstboot_complete(node, skip_reboot=True) is Outcome.REBOOT_PENDING
    assert (debian / GRUB_DROPIN.lstrip("/")).read_bytes() == grub_dropin(["nosmt"])
    assert runner.calls == [["chroot", str(debian), "update-grub"]]
    # run again on the same config (the drop-in carries it): nothing to do, no update-grub
    encapsulated.write_text(json.dumps(doc))
    assert firstboot_complete(_node(debian, runner), skip_reboot=True) is Outcome.DONE
    assert len(runner.calls) == 1


def test_mcd_plan_root_refuses_on_debian_and_accepts_on_an_ostree_root(
    debian: Path, tmp_path: Path
) -> None:
    ostree = tmp_path / "ostree-root"
    make_root(ostree)  # RHCOS's os-release, /run/ostree-booted
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text(json.dumps(mc_doc("rendered-1")))
    new.write_text(json.dumps(mc_doc("rendered-2", kernelType="realtime", extensions=["usbguard"],
                                     kernelArguments=["nosmt"])))  # fmt: skip
    refused = CliRunner().invoke(cli, ["plan", "--root", str(debian), str(old), str(new)])
    assert refused.exit_code == 2, refused.output
    assert "Node: Debian GNU/Linux 12 (bookworm) (OS image: none; kernel arguments: grub" in (
        refused.output
    )
    assert "Not applicable: spec.extensions: needs rpm-ostree; the node has none" in refused.output
    assert 'Not applicable: spec.kernelType: "realtime" needs rpm-ostree' in refused.output
    accepted = CliRunner().invoke(cli, ["plan", "--root", str(ostree), str(old), str(new)])
    assert accepted.exit_code == 0, accepted.output
    assert "(OS image: rpm-ostree; kernel arguments: rpm-ostree" in accepted.output
    assert "Reboot kind: full (the kernel or its command line changes" in accepted.output
