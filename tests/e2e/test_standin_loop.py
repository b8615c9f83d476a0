"""The real-node rollout loop (:mod:`tests.nodes.test_daemonset`) with the stand-in kubelet, for
the timings' comparison in ``docs/realnodes.md`` (issue 42): the same pool, the same first
rendered config (a file and an enabled unit, a reboot from the empty install config), two
nodes, ``maxUnavailable: 1``, two replicas of a workload under a PodDisruptionBudget
(``minAvailable: 1``). Here ``mcd controller`` and the agents are host processes on temp roots
(each node's systemd a real one in nspawn where the machine runs it), on the fake or the real
API server; the workload's ReplicaSet and scheduler are a loop in the test, a reboot is the
harness's (the agent stopped, the staged deployment booted, a new boot id, the agent started).
Each node's steps are printed as the real-node test prints them (``pytest -s``)."""

from __future__ import annotations

import itertools
import threading
import time
from functools import partial
from pathlib import Path

import pytest

from mcd.cluster.configs import MACHINECONFIGS
from mcd.cluster.pools import POOLS
from mcd.model.vocabulary import Annotation
from tests.e2e.conftest import NodeFactory
from tests.e2e.controller_harness import (
    ControllerProc,
    Rebooter,
    boot_on_rendered,
    label_node,
    pool_condition,
    target,
    wait,
)
from tests.e2e.harness import AgentNode
from tests.e2e.test_controller import _crds  # noqa: F401 - the CRD fixture
from tests.e2e.test_rollout import cordoned, live_pods, run_in_background
from tests.fakes.kubecluster import TestCluster
from tests.nodes.loop import FILE, HELLO, UNIT, Timeline, hello_config, machineconfig, pool

REPLICAS = 2
LABELS = {"app": "web"}


class Workload:
    """The ReplicaSet and the scheduler: REPLICAS pods, a missing one placed on the
    schedulable node with the fewest."""

    def __init__(self, cluster: TestCluster, namespace: str, nodes: list[str]) -> None:
        self.cluster, self.namespace, self.nodes = cluster, namespace, nodes
        self.serial = itertools.count()
        self.min_live = REPLICAS

    def reconcile(self) -> None:
        pods = live_pods(self.cluster, self.namespace)
        self.min_live = min(self.min_live, len(pods))
        for _ in range(REPLICAS - len(pods)):
            load = {n: 0 for n in self.nodes if not cordoned(self.cluster.get_node(n))}
            for p in pods:
                if p["spec"]["nodeName"] in load:
                    load[p["spec"]["nodeName"]] += 1
            if not load:
                return
            self.cluster.pod(self.namespace, f"web-{next(self.serial)}", min(load, key=lambda n: load[n]),
                             labels=LABELS)  # fmt: skip
            pods = live_pods(self.cluster, self.namespace)


def budget_counts(cluster: TestCluster, namespace: str) -> bool:
    got = cluster.kube.request(
        "GET", f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets/web"
    )
    status = got.get("status") or {}
    return (
        status.get("observedGeneration") == got["metadata"].get("generation")
        and status.get("currentHealthy") == REPLICAS
    )


def validated(node: AgentNode) -> bool:
    return "Validated on-disk state" in node.log()


def schedulable(node: AgentNode) -> bool:
    return not cordoned(node.node())


@pytest.mark.usefixtures("_crds")
def test_the_real_node_loop_with_the_stand_in_kubelet(
    make_node: NodeFactory, kube_cluster: TestCluster, tmp_path: Path
) -> None:
    cluster = kube_cluster
    ctl = ControllerProc(cluster, tmp_path, "a", cluster.namespace("ctl")).start()
    try:
        initial = cluster.name("rendered-worker-initial")  # the install's config: empty
        cluster.create(MACHINECONFIGS, machineconfig(initial, {}))
        nodes: list[AgentNode] = [make_node(f"worker-{i}", drain_mode="controller")
                                  for i in range(2)]  # fmt: skip
        names = [n.name for n in nodes]
        for node in nodes:
            label_node(cluster, node.name, "worker")
            boot_on_rendered(cluster, node, initial)
        for node in nodes:  # the agents up and Done, as the real nodes' pods are
            node.wait_ready(timeout=60)
            node.wait_for(partial(validated, node), 60, "the on-disk state validated")
            node.wait_state("Done", initial, timeout=60)
        apps = cluster.namespace("apps")
        workload = Workload(cluster, apps, names)
        workload.reconcile()
        cluster.pdb(apps, "web", LABELS, 1)
        wait(lambda: budget_counts(cluster, apps), 60, "the budget counting both pods")
        workload.min_live = REPLICAS  # from here on, the budget holds it at 1 or more

        stop, errors = threading.Event(), list[BaseException]()
        feeder = run_in_background(workload.reconcile, stop, 0.1, errors)
        try:
            with Rebooter(nodes) as rebooter:
                cluster.create(MACHINECONFIGS, hello_config())
                cluster.create(POOLS, pool())
                wait(lambda: target(cluster, "worker") != "", 60, "worker rendered", ctl.log)
                timeline = Timeline(names, target(cluster, "worker"), time.monotonic())
                before = {n.name: n.reboots_requested() for n in nodes}

                def poll() -> bool:
                    now = time.monotonic()
                    for node in nodes:
                        rebooted = node.reboots_requested() > before[node.name]
                        timeline.see(node.name, node.annotations(), rebooted, now)
                    return timeline.done()

                wait(poll, 300, f"both nodes Done on {timeline.target}", ctl.log,
                     *(n.log for n in nodes))  # fmt: skip
                assert rebooter.errors == []
        finally:
            stop.set()
            feeder.join(10)
        assert errors == []
        print("\n" + timeline.line("stand-in"))
        steps, config = timeline.seen, timeline.target
        for node in nodes:
            assert node.path(FILE).read_text() == HELLO
            assert node.path(f"/etc/systemd/system/multi-user.target.wants/{UNIT}").is_symlink()
            assert node.reboots_requested() == before[node.name] + 1
            assert "rebooted" in steps[node.name] and "drained" in steps[node.name]
            wait(partial(schedulable, node), 60, f"{node.name} uncordoned")
            assert node.annotations()[Annotation.LAST_APPLIED_DRAIN] == f"uncordon-{config}"
        first, second = sorted(names, key=lambda n: steps[n]["done"])
        assert steps[first]["drained"] <= steps[first]["rebooted"] <= steps[first]["done"]
        assert steps[first]["done"] <= steps[second]["drained"]
        assert workload.min_live >= 1  # the budget held while pods were evicted
        wait(lambda: pool_condition(cluster, "worker", "Updated").get("status") == "True",
             60, "worker Updated", ctl.log)  # fmt: skip
    finally:
        assert ctl.stop() == 0, ctl.log()[-3000:]
