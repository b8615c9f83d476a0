"""``mcd controller`` drains for the agents (issue 28): a real ``mcd start --drain-mode
controller`` agent asks by ``desiredDrain``; the controller, a real subprocess, cordons,
evicts through a PodDisruptionBudget that first forbids it (the pool's ``DrainBlocked``
condition, the pool's and the Node's Events and the node's MachineConfigNode ``Drained``
condition name the pod and the budget; the node stays ``Working``), then, once the budget is loosened, answers in ``lastAppliedDrain``; the agent
reboots into the new config and asks for the uncordon, which the controller answers too."""

from __future__ import annotations

from pathlib import Path

from mcd.cluster.configs import MACHINECONFIGS
from mcd.model.drain.settings import DRAIN_TIMEOUT_ANNOTATION
from mcd.model.vocabulary import Annotation
from tests.e2e.configs import worker
from tests.e2e.conftest import NodeFactory
from tests.e2e.controller_harness import (
    ControllerProc,
    Rebooter,
    boot_on_rendered,
    create_pool,
    get_pool,
    label_node,
    machine_config,
    pool,
    pool_condition,
    target,
    wait,
)
from tests.e2e.test_controller import BASE, MCN, _crds, rendered  # noqa: F401  (the CRD fixture)
from tests.fakes.kubecluster import TestCluster


def pool_events(cluster: TestCluster, name: str) -> list[tuple[str, str, str]]:
    events = cluster.kube.request("GET", "/api/v1/events")["items"]
    return [(e["type"], e["reason"], e["message"]) for e in events
            if e["involvedObject"].get("kind") == "MachineConfigPool"
            and e["involvedObject"].get("name") == name]  # fmt: skip


def test_the_controller_drains_for_the_agent_through_a_budget(
    make_node: NodeFactory, kube_cluster: TestCluster, tmp_path: Path
) -> None:
    cluster = kube_cluster
    ns = cluster.namespace("ctl")
    cluster.create(MACHINECONFIGS, machine_config("00-worker", "worker", BASE))
    annotations = {DRAIN_TIMEOUT_ANNOTATION: "2h"}
    create_pool(cluster, pool("worker", ["worker"], "worker", annotations=annotations))
    ctl = ControllerProc(cluster, tmp_path, "a", ns).start()
    try:
        first = rendered(cluster, "worker", ctl)
        node = make_node("worker-0", drain_mode="controller")
        label_node(cluster, node.name, "worker")
        boot_on_rendered(cluster, node, first)
        node.wait_state("Done", first)
        apps = cluster.namespace("apps")
        cluster.pod(apps, "web-0", node.name, {"app": "web"})
        cluster.pod(apps, "cache-0", node.name, {"app": "cache"})
        cluster.pdb(apps, "web-pdb", {"app": "web"}, 1)
        wait(lambda: cluster.budget_in_force(apps, "web-pdb"), 60, "budget in force")
        timeout = pool_condition(cluster, "worker", "DrainTimeout")
        assert (timeout["status"], timeout["reason"]) == ("True", "DrainTimeoutSet")
        assert "after 2h0m0s" in timeout["message"]

        with Rebooter([node]) as rebooter:
            app = worker("app", app="threads=8\n")
            cluster.create(MACHINECONFIGS, machine_config("50-worker-app", "worker", app))
            wait(lambda: target(cluster, "worker") != first, 30, "re-rendered", ctl.log)
            second = target(cluster, "worker")
            blocked = f"{apps}/web-0: blocked by PodDisruptionBudget {apps}/web-pdb: "
            wait(
                lambda: pool_condition(cluster, "worker", "DrainBlocked").get("status") == "True",
                60,
                "DrainBlocked",
                ctl.log,
                node.log,
            )
            condition = pool_condition(cluster, "worker", "DrainBlocked")
            assert condition["reason"] == "EvictionBlocked"
            assert condition["message"].startswith(
                f"1 node(s) cannot be drained: node {node.name}: {blocked}The disruption budget "
                "web-pdb needs 1 healthy pods and has 1 currently"
            )
            a = node.annotations()
            assert a[Annotation.DESIRED_DRAIN] == f"drain-{second}"
            assert a.get(Annotation.LAST_APPLIED_DRAIN) != f"drain-{second}"
            assert a[Annotation.STATE] == "Working"
            assert (node.node().get("spec") or {}).get("unschedulable") is True
            wait(lambda: cluster.pods_on(node.name) == ["web-0"], 30, "what no budget holds gone")
            node_events = [(e["type"], e["reason"], e["message"])
                           for e in cluster.events_for(node.name)]  # fmt: skip
            assert any(t == "Warning" and r == "DrainBlocked" and blocked in m
                       for t, r, m in node_events), node_events  # fmt: skip
            assert any(t == "Warning" and r == "DrainBlocked" and blocked in m
                       for t, r, m in pool_events(cluster, "worker"))  # fmt: skip
            assert node.reboots_requested() == 0, "no reboot before the drain"
            mcn = cluster.kube.request("GET", f"{MCN}/{node.name}")
            drained = {c["type"]: c for c in mcn["status"]["conditions"]}["Drained"]
            assert (drained["status"], drained["reason"]) == ("Unknown", "UpdateExecutedDrained")
            assert drained["message"].startswith(
                f"Error: Node Drain has not succeeded. Error is: {blocked}"
            )
            assert drained["message"].endswith(
                f"The drain will not be complete until desired drainer drain-{second} matches "
                f"current drainer {a.get(Annotation.LAST_APPLIED_DRAIN, '')}"
            )

            cluster.set_min_available(apps, "web-pdb", 0)  # the admin loosens the budget
            node.wait_state("Done", second, timeout=120)
            assert not rebooter.errors, rebooter.errors
        wait(
            lambda: node.annotations().get(Annotation.LAST_APPLIED_DRAIN) == f"uncordon-{second}",
            30,
            "uncordon answered",
            ctl.log,
        )
        wait(lambda: not (node.node().get("spec") or {}).get("unschedulable"), 30, "uncordoned")
        assert node.annotations()[Annotation.DESIRED_DRAIN] == f"uncordon-{second}"
        assert node.reboots_requested() == 1
        wait(lambda: cluster.pods_on(node.name) == [], 30, "web-0 gone")
        wait(
            lambda: pool_condition(cluster, "worker", "DrainBlocked").get("status") == "False",
            30,
            "DrainBlocked cleared",
            ctl.log,
        )
        assert pool_condition(cluster, "worker", "DrainBlocked")["message"] == (
            "no drain is blocked"
        )
        wait(
            lambda: pool_condition(cluster, "worker", "Updated").get("status") == "True",
            30,
            "pool updated",
            ctl.log,
        )
        status = get_pool(cluster, "worker")["status"]
        assert (status["updatedMachineCount"], status["machineCount"]) == (1, 1)
    finally:
        assert ctl.stop() == 0, ctl.log()[-3000:]
    assert "mcc_drain_err" not in ctl.log()


def test_a_bad_drain_timeout_is_one_condition_naming_the_annotation(
    kube_cluster: TestCluster, tmp_path: Path
) -> None:
    cluster = kube_cluster
    ns = cluster.namespace("ctl")
    cluster.create(MACHINECONFIGS, machine_config("00-worker", "worker", BASE))
    annotations = {DRAIN_TIMEOUT_ANNOTATION: "an hour"}
    create_pool(cluster, pool("worker", ["worker"], "worker", annotations=annotations))
    ctl = ControllerProc(cluster, tmp_path, "a", ns).start()
    try:
        rendered(cluster, "worker", ctl)
        wait(lambda: bool(pool_condition(cluster, "worker", "DrainTimeout")), 30, "condition",
             ctl.log)  # fmt: skip
        condition = pool_condition(cluster, "worker", "DrainTimeout")
        assert (condition["status"], condition["reason"]) == ("False", "InvalidDrainTimeout")
        assert condition["message"] == (
            "annotation mcd-project.github.io/drain-timeout: expected a duration such as 90m, "
            "2h or 1h30m, got 'an hour'; the default 1h0m0s applies"
        )
        assert pool_condition(cluster, "worker", "Degraded").get("status") != "True"
    finally:
        assert ctl.stop() == 0, ctl.log()[-3000:]
