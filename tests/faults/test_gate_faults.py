"""The fault matrix's health-gate cells (issue 19): the agent SIGKILLed inside a failed gate's
rollback, rebootless (between the files and the actions run again) and after the boot into a
new deployment or, without an OS change, the boot with the new files (before the rollback,
before its reboot). The next agent finishes the
rollback: the node ends exactly on its old config, Degraded naming the failed check, with
no reboot loop; once the check passes and the force file asks for it, it reaches the target.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from mcd.model.node.health import GATE_ANNOTATION, REQUIRED_DIR
from mcd.model.vocabulary import FORCE_FILE, Annotation
from tests.faults.drive import assert_exactly_on
from tests.faults.test_fault_matrix import Cell, cell_for, cells, record  # noqa: F401

KILL_POINTS = {
    "rebootless": ["rollback:files", "rollback:actions"],
    "os": ["gate-rollback", "gate-reboot"],
    "reboot": ["gate-rollback", "gate-reboot"],  # no OS change: the journal kept the files
}
REDUCED = {("rebootless", "rollback:actions"), ("os", "gate-rollback"), ("reboot", "gate-reboot")}
CHECK = f"{REQUIRED_DIR}/10-probe"


@pytest.mark.parametrize(
    ("kind", "point"), cells([(k, p) for k, ps in KILL_POINTS.items() for p in ps], REDUCED)
)
def test_sigkill_inside_a_gate_rollback(
    kind: str,
    point: str,
    cell_for: Callable[[str], Cell],  # noqa: F811
) -> None:
    started = time.monotonic()
    c = cell_for(kind)
    check = c.node.path(CHECK)  # the admin's check fails on whatever the update brings
    check.parent.mkdir(parents=True, exist_ok=True)
    check.write_text("#!/bin/sh\necho probe failed\nexit 1\n")
    check.chmod(0o755)
    c.cluster.annotate(c.node.name, {GATE_ANNOTATION: "max_boots=1,settle=0"})
    c.node.base_env["MCD_CRASH_AT"] = point  # every agent of this node, reboots included,
    c.node.stop()  # until one dies there
    c.node.start()
    c.node.wait_ready()
    new, doc = c.update()
    c.node.set_desired(new)
    deadline = time.monotonic() + 90
    while c.node.proc is not None and c.node.proc.poll() != -9:
        assert time.monotonic() < deadline, f"no SIGKILL at {point}: {c.node.log()[-3000:]}"
        if c.node.reboots_requested() > c.sup.reboots:
            c.sup.tick()  # the machine reboots; the agent after it carries the crash point
        time.sleep(0.05)
    del c.node.base_env["MCD_CRASH_AT"]  # systemd restarts it clean
    c.sup.until(
        lambda a: a.get(Annotation.STATE) == "Degraded"
        and a.get(Annotation.REASON, "").startswith("health gate failed")
        and "check required.d/10-probe failed: exit status 1: probe failed"
        in a.get(Annotation.REASON, ""),
        120, "Degraded by the health gate",
    )  # fmt: skip
    assert c.sup.restarts >= 1  # the agent was killed inside the rollback, and restarted
    assert c.node.annotations()[Annotation.CURRENT_CONFIG] == c.old
    assert_exactly_on(c.node, c.old_doc)  # the rollback was finished by the next agent
    if kind == "os":
        booted = next(d for d in c.node.rpm()["deployments"] if d["booted"])
        assert booted["container-image-reference"].endswith(c.old_doc["spec"]["osImageURL"])
    if kind != "rebootless":
        assert c.sup.reboots == 2  # into the new config, back to the old one: no loop
    reboots = c.sup.reboots
    time.sleep(1)
    c.sup.tick()
    assert c.sup.reboots == reboots
    check.unlink()
    c.node.path(FORCE_FILE).write_text("")
    c.sup.done_on(new, timeout=120)
    assert_exactly_on(c.node, doc)
    record(f"SIGKILL at {point} (gate)", kind, "old + gate reason, then target", started)
