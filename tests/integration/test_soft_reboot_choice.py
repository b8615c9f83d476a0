"""Soft reboots on a temp root (issue 34): which reboot the transaction asks systemd for, what it
records, and how the next start proves the soft reboot or leaves a full one owed. A real
systemd 257 soft-reboots in ``tests/real/test_soft_reboot.py``."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from mcd.agent.bootloader import softreboot
from mcd.agent.safety import owed
from mcd.agent.update.handles import Node
from mcd.agent.update.transaction import Outcome, Transaction
from mcd.host.effects import HostEffects
from mcd.host.rootfs import Root
from mcd.model.machineconfig import load_machine_config
from mcd.model.planning.applicability import HostSupport
from mcd.model.planning.plan import UpdatePlan, make_plan
from mcd.model.planning.rebootkind import RebootKind
from tests.builders import file_entry, mc_doc
from tests.fakes.memory_systemd import MemorySystemd

TRIXIE = HostSupport("Debian GNU/Linux 13 (trixie)", "", "", 257)


@pytest.fixture
def node(node_root: Path) -> Node:
    (node_root / "proc/sys/kernel/random").mkdir(parents=True)
    (node_root / "proc/sys/kernel/random/boot_id").write_text(str(uuid.uuid4()))
    (node_root / "etc/app.conf").write_text("a\n")  # on rendered-1
    (node_root / "etc/app.conf").chmod(0o644)
    root = Root(node_root)
    return Node(root, HostEffects(root, MemorySystemd(node_root)), host_support=TRIXIE)


def _docs(**spec: Any) -> tuple[bytes, bytes]:
    old = mc_doc("rendered-1", files=[file_entry("/etc/app.conf", "a\n")])
    new = mc_doc("rendered-2", files=[file_entry("/etc/app.conf", "b\n")], **spec)
    return json.dumps(old).encode(), json.dumps(new).encode()


def _plan(node: Node, old: bytes, new: bytes, allowed: bool = True) -> UpdatePlan:
    return make_plan(
        load_machine_config(old), load_machine_config(new), host=node.support(),
        soft_reboot=allowed,
    )  # fmt: skip


def _systemd(node: Node) -> MemorySystemd:
    systemd = node.effects.systemd
    assert isinstance(systemd, MemorySystemd)
    return systemd


def test_a_file_change_soft_reboots_and_the_next_start_proves_it(node: Node) -> None:
    old, new = _docs()
    plan = _plan(node, old, new)
    assert plan.reboot_choice.kind is RebootKind.SOFT
    _systemd(node).soft_reboot_count = 4
    assert Transaction(node, plan, old, new).run() is Outcome.REBOOTING
    assert ("soft-reboot", ()) in _systemd(node).calls
    assert ("reboot", ()) not in _systemd(node).calls
    record = owed.pending_in(node.root, node.boot_id())
    assert record is not None and record.config == "rendered-2"
    # userspace came back on the same kernel: same boot id, one more soft reboot
    _systemd(node).soft_reboot_count = 5
    proof = softreboot.settle(node, record)
    assert proof == (
        f"Soft reboot into config rendered-2 done: boot id {node.boot_id()} unchanged, "
        "soft reboots 4 -> 5"
    )
    assert owed.pending_in(node.root, node.boot_id()) is None
    assert not node.root.exists(softreboot.RECORD)


def test_an_agent_restarted_before_the_soft_reboot_leaves_a_full_reboot_owed(node: Node) -> None:
    old, new = _docs()
    _systemd(node).soft_reboot_count = 0
    Transaction(node, _plan(node, old, new), old, new).run()
    record = owed.pending_in(node.root, node.boot_id())
    assert softreboot.settle(node, record) == ""  # the count did not move: it never happened
    assert owed.pending_in(node.root, node.boot_id()) is not None  # the owed reboot is due
    assert not node.root.exists(softreboot.RECORD)  # and it will be a full one


def test_no_soft_reboot_without_the_counter_or_the_setting_or_with_a_new_kernel(
    node: Node,
) -> None:
    old, new = _docs()
    Transaction(node, _plan(node, old, new), old, new).run()  # systemd without the counter
    assert _systemd(node).calls[-1] == ("reboot", ())
    assert not node.root.exists(softreboot.RECORD)
    assert _plan(node, old, new, allowed=False).reboot_choice.kind is RebootKind.FULL
    old, new = _docs(fips=False, kernelArguments=["nosmt"])
    choice = make_plan(
        load_machine_config(old), load_machine_config(new),
        host=HostSupport("Debian GNU/Linux 13 (trixie)", "", "grub", 257), soft_reboot=True,
    ).reboot_choice  # fmt: skip
    assert choice.kind is RebootKind.FULL and "kargs" in choice.why
