"""Drain-aware rollout order on a live API server (the fake, or the real kube-apiserver): the
oldest node (first in upstream's order) runs a pod a PodDisruptionBudget holds; with
``maxUnavailable: 1`` the controller targets the other node first and the held one last, and
the pool's ``Updating`` message says so (issue 31; MCO#2059)."""

from __future__ import annotations

from pathlib import Path

from mcd.cluster.configs import MACHINECONFIGS
from mcd.cluster.node import annotations_of
from mcd.model.vocabulary import Annotation
from tests.e2e.configs import worker
from tests.e2e.controller_harness import (
    ControllerProc,
    create_pool,
    label_node,
    machine_config,
    pool,
    pool_condition,
    target,
    wait,
)
from tests.e2e.test_controller import BASE, _crds, play_agent  # noqa: F401 - the CRD fixture
from tests.fakes.kubecluster import TestCluster


def test_a_node_a_budget_would_block_goes_last(kube_cluster: TestCluster, tmp_path: Path) -> None:
    cluster = kube_cluster
    ns = cluster.namespace("ctl")
    cluster.create(MACHINECONFIGS, machine_config("00-worker", "worker", BASE))
    create_pool(cluster, pool("worker", ["worker"], "worker", max_unavailable=1))
    held = cluster.node("a-held")  # first in upstream order (by name within the same second)
    free = cluster.node("b-free")
    apps = cluster.namespace("apps")
    cluster.pod(apps, "web-0", held, {"app": "web"})
    cluster.pdb(apps, "web-pdb", {"app": "web"}, 1)
    wait(lambda: cluster.budget_in_force(apps, "web-pdb"), 60, "budget in force")
    ctl = ControllerProc(cluster, tmp_path, "a", ns).start()
    try:
        wait(lambda: target(cluster, "worker") != "", 30, "rendered", ctl.log)
        first = target(cluster, "worker")
        for name in (held, free):
            label_node(cluster, name, "worker")
            play_agent(cluster, name, first)
        cluster.create(
            MACHINECONFIGS, machine_config("50-app", "worker", worker("app", app="threads=8\n"))
        )
        wait(lambda: target(cluster, "worker") != first, 30, "re-rendered", ctl.log)
        second = target(cluster, "worker")

        def desired(node: str) -> str:
            return str(annotations_of(cluster.get_node(node)).get(Annotation.DESIRED_CONFIG))

        wait(lambda: desired(free) == second, 30, "the free node targeted first", ctl.log)
        assert desired(held) == first, "the held node waits"
        last = f"; last: {held} (a PodDisruptionBudget would block the drain, or it timed out)"
        # the pool's status is written after the Node in the same pass: a reader can be between
        wait(
            lambda: str(pool_condition(cluster, "worker", "Updating").get("message", ""))
            .endswith(last), 30, "the Updating condition names the held node last", ctl.log,
        )  # fmt: skip
        play_agent(cluster, free, second)
        wait(lambda: desired(held) == second, 30, "then the held node", ctl.log)
    finally:
        ctl.stop()
