"""Drain-aware pieces against the API server (fake or real): the forecast names the node a
budget would block; a pool's drains never exceed its ``maxUnavailable`` in flight; a drain
past the pool's own timeout is released, naming the pod that held it."""

from __future__ import annotations

from mcd.cluster.drain.forecast import DrainForecast
from mcd.controller.drain import DrainController, DrainPolicy
from mcd.controller.service import ControllerMetrics
from mcd.model.drain.cadence import Cadence
from mcd.model.vocabulary import Annotation
from tests.fakes.kubecluster import TestCluster, eventually
from tests.integration.test_drain_controller import Clock

CADENCE = Cadence(attempt=1.0, evict_retry=0.1)


def test_the_forecast_names_the_node_a_budget_would_block(kube_cluster: TestCluster) -> None:
    cluster = kube_cluster
    held, free = cluster.node("held"), cluster.node("free")
    ns = cluster.namespace("apps")
    cluster.pod(ns, "web-0", held, {"app": "web"})
    cluster.pod(ns, "job-0", free, {"app": "job"})
    cluster.pdb(ns, "web-pdb", {"app": "web"}, 1)
    assert eventually(lambda: cluster.budget_in_force(ns, "web-pdb"), 60)
    got = DrainForecast(cluster.kube, ttl=0).blocked()
    assert got.get(held) == f"{ns}/web-0: PodDisruptionBudget {ns}/web-pdb allows no disruption"
    assert free not in got


def test_drains_in_flight_stay_within_the_pool_limit(kube_cluster: TestCluster) -> None:
    cluster = kube_cluster
    nodes = [cluster.node(f"w{i}") for i in range(3)]
    ns = cluster.namespace("apps")
    cluster.pod(ns, "web-0", nodes[0], {"app": "web"})
    cluster.pdb(ns, "web-pdb", {"app": "web"}, 1)
    assert eventually(lambda: cluster.budget_in_force(ns, "web-pdb"), 60)
    clock = Clock()
    drains = DrainController(cluster.kube, ControllerMetrics(), cluster.get_node, cadence=CADENCE,
                             clock=clock, backoff=(0.05,))  # fmt: skip
    policy = DrainPolicy("worker", 3600.0, limit=1)
    policies = dict.fromkeys(nodes, policy)
    try:
        for n in nodes:
            cluster.annotate(n, {Annotation.DESIRED_DRAIN: "drain-rendered-worker-2"})
        drains.sync([cluster.get_node(n) for n in nodes], policies)
        assert drains.attempts == 1, "one drain at a time in a pool of maxUnavailable 1"
        assert eventually(lambda: not drains.busy(), 60)
        cordoned = [
            n for n in nodes if (cluster.get_node(n).get("spec") or {}).get("unschedulable")
        ]
        assert cordoned == [nodes[0]], "the blocked drain keeps its slot"
        clock.now += 61
        drains.sync([cluster.get_node(n) for n in nodes], policies)
        assert drains.attempts == 2, "its retry, and still no second drain"
        assert eventually(lambda: not drains.busy(), 60)
    finally:
        drains.shutdown()


def test_a_drain_past_the_pools_timeout_is_released_naming_the_pod(
    kube_cluster: TestCluster,
) -> None:
    cluster = kube_cluster
    node, ns = cluster.node("w"), cluster.namespace("apps")
    cluster.pod(ns, "web-0", node, {"app": "web"})
    cluster.pdb(ns, "web-pdb", {"app": "web"}, 1)
    assert eventually(lambda: cluster.budget_in_force(ns, "web-pdb"), 60)
    clock = Clock()
    drains = DrainController(cluster.kube, ControllerMetrics(), cluster.get_node, cadence=CADENCE,
                             clock=clock, backoff=(0.05,))  # fmt: skip
    policies = {node: DrainPolicy("worker", 120.0, limit=1, release=True)}
    try:
        cluster.annotate(node, {Annotation.DESIRED_DRAIN: "drain-rendered-worker-2"})
        drains.sync([cluster.get_node(node)], policies)
        assert eventually(lambda: not drains.busy(), 60)
        assert drains.released() == {}
        clock.now += 121
        drains.sync([cluster.get_node(node)], policies)
        assert eventually(lambda: not drains.busy(), 60)
        assert f"{ns}/web-0: blocked by PodDisruptionBudget {ns}/web-pdb" in drains.released()[node]
    finally:
        drains.shutdown()
