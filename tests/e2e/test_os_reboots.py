"""Reboots the OS asks for, through the pool's slots (issue 44 items 1, 2 and 4): the
controller and three agents (host processes on temp roots) on a live API server (the fake, or
the real kube-apiserver).

1. Unattended upgrades leave ``/var/run/reboot-required`` on two nodes: each agent says so on
   its Node (``reboot-required``, naming the file), its MachineConfigNode
   (``RebootRequired``) and ``mcd_reboot_required``; nothing reboots while the pool's
   rollout policy has no ``"osReboots": true``, and ``mcd plan --pool`` and ``mcd status
   --cluster`` say why.
2. ``"osReboots": true`` with ``maxUnavailable: 1``: the first node gets the slot, is drained
   by the drain controller and reboots; a MachineConfig that needs a reboot on every node,
   created meanwhile, waits for that slot. Both kinds finish; over every Node version the
   API server stored (or every watch event on a real one) the pool never had more than one
   node out, an OS reboot counted from its request to its answer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mcd.cluster.configs import MACHINECONFIGS
from mcd.cluster.node import annotations_of
from mcd.model.node import mcn as m
from mcd.model.pool.canary import POLICY_ANNOTATION
from mcd.model.reboots.requests import (
    DONE_ANNOTATION,
    REQUESTED_ANNOTATION,
    REQUIRED_ANNOTATION,
    NodeReboot,
)
from mcd.model.vocabulary import Annotation
from tests.e2e.configs import worker
from tests.e2e.conftest import NodeFactory
from tests.e2e.controller_harness import (
    ControllerProc,
    NodeMonitor,
    Rebooter,
    _unavailable,
    boot_on_rendered,
    create_pool,
    get_pool,
    history_mark,
    label_node,
    machine_config,
    patch_pool,
    pool,
    pool_condition,
    replay_unavailable,
    target,
    wait,
)
from tests.e2e.harness import AgentNode
from tests.e2e.test_controller import BASE, _crds, rendered  # noqa: F401 - the CRD fixture
from tests.e2e.test_rollback import mcd
from tests.e2e.test_update_metrics import value
from tests.fakes.kubecluster import TestCluster

Obj = dict[str, Any]
SENTINEL = "/var/run/reboot-required"
MCN = "/apis/machineconfiguration.openshift.io/v1/machineconfignodes"


def out(node: Obj) -> bool:
    """Unavailable as the pool counts it: updating, cordoned, or an OS reboot under way."""
    return _unavailable(node) or NodeReboot.of(annotations_of(node)).pending


def asks(node: AgentNode) -> str:
    return annotations_of(node.node()).get(REQUIRED_ANNOTATION, "")


def start_nodes(cluster: TestCluster, make_node: NodeFactory, config: str) -> list[AgentNode]:
    nodes = []
    for i in range(3):
        node = make_node(f"worker-{i}", drain_mode="controller",
                         extra_args=("--reboot-check-period", "1"))  # fmt: skip
        if not (node.root / "var/run").is_symlink():  # as on every Debian and RHEL host
            (node.root / "var").mkdir(exist_ok=True)
            (node.root / "var/run").symlink_to("../run")
        label_node(cluster, node.name, "worker")
        boot_on_rendered(cluster, node, config)
        nodes.append(node)
    for node in nodes:
        node.wait_ready()
        node.wait_state("Done", config)
    return nodes


def test_os_reboots_and_an_update_share_the_pool_slots(
    make_node: NodeFactory, kube_cluster: TestCluster, tmp_path: Path
) -> None:
    cluster = kube_cluster
    ns = cluster.namespace("ctl")
    cluster.create(MACHINECONFIGS, machine_config("00-worker", "worker", BASE))
    policy = {POLICY_ANNOTATION: json.dumps({"maxUnhealthy": 0})}
    create_pool(cluster, pool("worker", ["worker"], "worker", max_unavailable=1,
                              annotations=policy))  # fmt: skip
    ctl = ControllerProc(cluster, tmp_path, "a", ns).start()
    monitor: NodeMonitor | None = None
    try:
        first = rendered(cluster, "worker", ctl)
        nodes = start_nodes(cluster, make_node, first)
        wait(lambda: pool_condition(cluster, "worker", "Updated").get("status") == "True",
             60, "worker Updated", ctl.log)  # fmt: skip

        # 1. the OS asks; the agents say so, and nothing reboots on its own
        for node in nodes[:2]:
            node.path("/run/reboot-required").write_text("*** System restart required ***\n")
        for node in nodes[:2]:

            def reported(n: AgentNode = node) -> bool:
                return bool(json.loads(asks(n) or "{}").get("source") == SENTINEL)

            node.wait_for(reported, 30, "reboot-required on the Node")
            assert value(node, "mcd_reboot_required") == 1
            mcn = cluster.kube.request("GET", f"{MCN}/{node.name}")
            found = [c for c in mcn["status"]["conditions"] if c["type"] == m.REBOOT_REQUIRED]
            assert found and found[0]["status"] == "True", found
            assert f"The OS asks for a reboot ({SENTINEL})" in found[0]["message"]
        assert asks(nodes[2]) == "" and value(nodes[2], "mcd_reboot_required") == 0
        shown = mcd(cluster, "plan", "--pool", "worker")
        assert shown.returncode == 0, shown.stderr
        assert (f'{nodes[0].name}: OS reboot not scheduled (asked by {SENTINEL} since '
                in shown.stdout), shown.stdout  # fmt: skip
        assert 'the rollout policy has no "osReboots": true' in shown.stdout
        fleet = mcd(cluster, "status", "--cluster")
        assert f"node {nodes[1].name}: OS reboot not scheduled (asked by {SENTINEL}" in (
            fleet.stdout), fleet.stdout + fleet.stderr  # fmt: skip
        assert all(n.reboots_requested() == 0 for n in nodes)

        # 2. OS reboots on; a reboot update arrives while the first OS reboot holds the slot
        fake = cluster.fake
        mark = history_mark(fake) if fake is not None else None
        members = {n.name: "worker" for n in nodes}
        if fake is None:
            monitor = NodeMonitor(cluster, members, out).__enter__()
        with Rebooter(nodes) as rebooter:
            on = {POLICY_ANNOTATION: json.dumps({"maxUnhealthy": 0, "osReboots": True})}
            patch_pool(cluster, "worker", {"metadata": {"annotations": on}})
            nodes[0].wait_for(lambda: REQUESTED_ANNOTATION in nodes[0].annotations(), 30,
                              "the first OS reboot requested")  # fmt: skip
            app = worker("app", app="threads=8\n")  # a file change: a reboot on every node
            cluster.create(MACHINECONFIGS, machine_config("50-worker-app", "worker", app))
            wait(lambda: target(cluster, "worker") not in ("", first), 30, "re-rendered", ctl.log)
            second = target(cluster, "worker")
            wait(lambda: (pool_condition(cluster, "worker", "Updated").get("status") == "True"
                          and get_pool(cluster, "worker")["status"]["configuration"]["name"]
                          == second and not any(out(n.node()) for n in nodes)
                          and not any(asks(n) for n in nodes)),
                 240, "the update and the OS reboots done", ctl.log,
                 lambda: json.dumps({n.name: n.annotations() for n in nodes}, indent=1),
                 nodes[0].log)  # fmt: skip
            assert not rebooter.errors, rebooter.errors
    finally:
        assert ctl.stop() == 0, ctl.log()[-3000:]
        if monitor is not None:
            monitor.__exit__()

    first_node = nodes[0].annotations()
    request = first_node[REQUESTED_ANNOTATION]
    assert json.loads(first_node[DONE_ANNOTATION])["request"] == request
    for node in nodes:
        a = node.annotations()
        assert (a[Annotation.CURRENT_CONFIG], a[Annotation.STATE]) == (second, "Done")
        assert not (node.node().get("spec") or {}).get("unschedulable")
        os_reboots = 1 if DONE_ANNOTATION in a else 0  # the update's reboot cleared /run too
        assert node.reboots_requested() == 1 + os_reboots, node.name
        assert value(node, "mcd_reboot_required") == 0
    reasons = [e.get("reason") for e in cluster.events_for("worker")]
    assert "OSRebootRequested" in reasons, reasons
    if fake is not None and mark is not None:
        peak = replay_unavailable(fake, members, mark, out)
    else:
        assert monitor is not None and monitor.events > 10, "every node change was seen"
        peak = monitor.peak
    assert peak == {"worker": 1}, peak
