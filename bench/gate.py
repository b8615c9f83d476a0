"""Health gates: the time from a failed gate to the node back on its previous config.

In-process, on a temp root with the in-memory systemd and the rpm-ostree stand-in; the gate
fails on an admin's required check (``exit 1``). Baselines, measured in the same run: the
forward update of the same change (100 files) with the gate off, so the ratio says what a
rollback costs next to the update it undoes.

* rebootless: from the gate's failed verdict to the files restored, the actions run again and
  ``currentconfig`` left on the old config (the error raised);
* reboot: from the failed verdict, in the boot into the new deployment, to the reboot into the
  previous one requested (files restored, ``rpm-ostree rollback`` done). The reboot itself
  is the machine's own time and is not in the figure; the baseline is the forward update to
  its reboot request (files, ``rpm-ostree rebase``).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

from bench.common import Row, ratio_check, with_load_check
from mcd.agent.commands.once import once_from
from mcd.agent.safety import gateboots
from mcd.agent.safety.health import HealthGate
from mcd.agent.update.handles import Node
from mcd.agent.update.journal import Journal
from mcd.agent.update.resume import recover
from mcd.agent.update.transaction import Outcome, Transaction, UpdateError
from mcd.host.effects import HostEffects
from mcd.host.osupdate.rpmostree import RpmOstree
from mcd.host.rootfs import Root
from mcd.model.disruption.policy import DisruptionPolicies, FilePolicy, restart
from mcd.model.machineconfig import MachineConfig, load_machine_config
from mcd.model.node.health import REQUIRED_DIR, GateSettings, Verdict
from mcd.model.planning.applicability import COREOS
from mcd.model.planning.plan import make_plan
from mcd.model.vocabulary import CURRENT_CONFIG_PATH
from tests.builders import file_entry, mc_doc
from tests.e2e.harness import BIN, make_root
from tests.fakes import rpm_ostree
from tests.fakes.memory_systemd import MemorySystemd

FILES = 100
IMAGE_A, IMAGE_B = "quay.io/openshift/os@sha256:aaaa", "quay.io/openshift/os@sha256:bbbb"
UNIT = "[Service]\nExecStart=/usr/bin/app\n[Install]\nWantedBy=multi-user.target\n"
POLICIES = DisruptionPolicies(
    files=(FilePolicy("/etc/bench", (restart("app.service"),)),)
)  # fmt: skip
TARGET = 1.5
"""``make bench``: a rollback within this many times the update it undoes."""
LOAD_TARGET = 6.0
"""``make test``: the same with headroom for a loaded machine (fsync-bound both ways)."""


def _doc(name: str, tag: str, image: str = IMAGE_A) -> bytes:
    files = [
        file_entry(f"/etc/bench/d{i % 10}/f{i}.conf", f"{tag} {i}\n" * 200) for i in range(FILES)
    ]
    units = [{"name": "app.service", "contents": UNIT, "enabled": True}]
    return json.dumps(mc_doc(name, files=files, units=units, osImageURL=image)).encode()


class _Timed(HealthGate):
    """The gate, noting when its verdict was out."""

    verdict_at = 0.0

    def run(self, mc: MachineConfig, settle: bool = True) -> Verdict:
        verdict = super().run(mc, settle)
        self.verdict_at = time.perf_counter()
        return verdict


def _node(root: Path, ostree: bool) -> tuple[Node, MemorySystemd]:
    make_root(root)
    if not ostree:
        (root / "run/ostree-booted").unlink()
    (root / "proc/sys/kernel/random/boot_id").write_text(str(uuid.uuid4()))
    systemd = MemorySystemd(root)
    r = Root(root)
    if ostree:
        return Node(r, HostEffects(r, systemd), RpmOstree(r)), systemd
    # an image-based host whose rpm-ostree is not called here: its osImageURL is applicable
    return Node(r, HostEffects(r, systemd), None, host_support=COREOS), systemd


def _failing_check(root: Path) -> None:
    check = root / REQUIRED_DIR.lstrip("/") / "50-probe"
    check.parent.mkdir(parents=True, exist_ok=True)
    check.write_text("#!/bin/sh\necho probe failed\nexit 1\n")
    check.chmod(0o755)


def _txn(node: Node, new_doc: bytes, gate: HealthGate | None) -> Transaction:
    old_doc = node.root.read_bytes(CURRENT_CONFIG_PATH)
    plan = make_plan(load_machine_config(old_doc), load_machine_config(new_doc), POLICIES)
    return Transaction(node, plan, old_doc, new_doc, preflight=False, gate=gate)


def bench_rebootless(tmp: Path, rounds: int = 4) -> Row:
    node, systemd = _node(tmp / "rebootless", ostree=False)
    old = tmp / "old.json"
    old.write_bytes(_doc("rendered-bench-1", "a"))
    once_from(str(old), node, skip_reboot=True)
    _failing_check(tmp / "rebootless")
    new_doc, old_doc = _doc("rendered-bench-2", "b"), old.read_bytes()
    figures, baselines = [], []
    for _ in range(rounds):
        gate = _Timed(node.root, systemd, GateSettings(settle=0))
        try:
            _txn(node, new_doc, gate).run()
            raise AssertionError("the gate passed")
        except UpdateError:
            figures.append(time.perf_counter() - gate.verdict_at)
        assert load_machine_config(node.root.read_bytes(CURRENT_CONFIG_PATH)).name.endswith("-1")
        start = time.perf_counter()
        assert _txn(node, new_doc, None).run() is Outcome.DONE  # the same update, no gate
        baselines.append(time.perf_counter() - start)
        assert _txn(node, old_doc, None).run() is Outcome.DONE  # back, untimed
    figure, base = statistics.median(figures), statistics.median(baselines)
    text, ok = ratio_check(figure, base, TARGET)
    row = Row(f"failed gate -> previous config, rebootless ({FILES} files)", figure, base, text, ok)
    return with_load_check(row, LOAD_TARGET)


def bench_reboot(tmp: Path, rounds: int = 3) -> Row:
    root = tmp / "reboot"
    state = tmp / "rpm-ostree.json"
    rpm_ostree.save(state, rpm_ostree.new_state(IMAGE_A))
    os.environ.update(PATH=f"{BIN}:{os.environ['PATH']}", MCD_FAKE_RPMOSTREE_STATE=str(state),
                      MCD_TEST_PYTHON=sys.executable)  # fmt: skip
    node, systemd = _node(root, ostree=True)  # its rpm-ostree client takes the environment
    old = tmp / "old-os.json"
    old.write_bytes(_doc("rendered-bench-1", "a"))
    once_from(str(old), node, skip_reboot=True)
    _failing_check(root)
    new_doc = _doc("rendered-bench-2", "b", IMAGE_B)
    figures, baselines = [], []
    for _ in range(rounds):
        start = time.perf_counter()
        assert _txn(node, new_doc, None).run() is Outcome.REBOOTING  # baseline: to the request
        baselines.append(time.perf_counter() - start)
        _boot(root, state)
        gate = _Timed(node.root, systemd, GateSettings(settle=0, max_boots=100))
        assert recover(node, gate=gate) is Outcome.REBOOTING  # failed gate: back, reboot
        figures.append(time.perf_counter() - gate.verdict_at)
        _boot(root, state)  # into the previous deployment
        assert not Journal(node.root).pending()
        gateboots.clear(node.root)
    figure, base = statistics.median(figures), statistics.median(baselines)
    text, ok = ratio_check(figure, base, TARGET)
    row = Row(
        f"failed gate -> reboot into previous, reboot ({FILES} files)", figure, base, text, ok
    )
    return with_load_check(row, LOAD_TARGET)


def _boot(root: Path, state: Path) -> None:
    assert rpm_ostree.boot_staged(state)
    (root / "proc/sys/kernel/random/boot_id").write_text(str(uuid.uuid4()))


def bench_gate() -> list[Row]:
    saved = dict(os.environ)
    with tempfile.TemporaryDirectory(prefix="mcd-bench-gate-") as tmp:
        try:
            return [bench_rebootless(Path(tmp)), bench_reboot(Path(tmp))]
        finally:
            os.environ.clear()
            os.environ.update(saved)


if __name__ == "__main__":
    from bench.common import print_table

    print_table(bench_gate(), load_tolerant="--load-tolerant" in sys.argv)
