"""The drain controller (:class:`mcd.controller.drain.DrainController`) in this process against
the API server (fake or real), on a clock that moves only when the test says: a budget blocks
the drain, the Node's Events and :meth:`blocked` name the pod and the budget, the retries
follow upstream's cadence (1 minute, 5 after 10 minutes with ``DrainThresholdExceeded``,
``DrainFailed`` and ``mcc_drain_err`` past the timeout), then the budget is loosened and the
drain completes; uncordon; a node uncordoned by someone during a drain is cordoned again."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from mcd.cluster.node import annotations_of
from mcd.controller.drain import DrainController, DrainPolicy
from mcd.controller.service import ControllerMetrics
from mcd.model.drain.cadence import Cadence
from mcd.model.vocabulary import Annotation
from tests.fakes.kubecluster import TestCluster, eventually

CONFIG = "rendered-worker-2"
CADENCE = Cadence(attempt=1.0, evict_retry=0.1)


@dataclass
class Clock:
    now: float = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Setup:
    cluster: TestCluster
    node: str
    ns: str
    clock: Clock
    metrics: ControllerMetrics
    drains: DrainController

    def attempt(self, timeouts: dict[str, float] | None = None) -> int:
        """One pass: the attempts it started (waited for)."""
        before = self.drains.attempts
        policies = {n: DrainPolicy(timeout=t) for n, t in (timeouts or {}).items()}
        self.drains.sync([self.cluster.get_node(self.node)], policies)
        assert eventually(lambda: not self.drains.busy(), 60), "the attempt never ended"
        return self.drains.attempts - before

    def budget_allows(self) -> bool:
        """The budget's status counts its new spec and allows a disruption."""
        got = self.cluster.kube.request(
            "GET", f"/apis/policy/v1/namespaces/{self.ns}/poddisruptionbudgets/web-pdb"
        )
        status = got.get("status") or {}
        return bool(
            status.get("observedGeneration") == got["metadata"].get("generation")
            and status.get("disruptionsAllowed", 0) >= 1
        )

    def annotations(self) -> dict[str, str]:
        return annotations_of(self.cluster.get_node(self.node))

    def unschedulable(self) -> bool:
        return bool((self.cluster.get_node(self.node).get("spec") or {}).get("unschedulable"))

    def events(self) -> list[tuple[str, str, str]]:
        return [(e["type"], e["reason"], e["message"]) for e in self.cluster.events_for(self.node)
                if e["source"].get("component", "").startswith("machineconfigcontroller")]  # fmt: skip

    def drain_err(self) -> float | None:
        return self.metrics.registry.get_sample_value("mcc_drain_err", {"node": self.node})


@pytest.fixture
def setup(kube_cluster: TestCluster) -> Iterator[Setup]:
    cluster = kube_cluster
    node, ns = cluster.node("worker"), cluster.namespace("apps")
    cluster.pod(ns, "web-0", node, {"app": "web"})
    cluster.pod(ns, "other-0", node, {"app": "other"})
    cluster.pdb(ns, "web-pdb", {"app": "web"}, 1)
    assert eventually(lambda: cluster.budget_in_force(ns, "web-pdb"), 60)
    clock, metrics = Clock(), ControllerMetrics()
    drains = DrainController(cluster.kube, metrics, cluster.get_node, cadence=CADENCE,
                             clock=clock, backoff=(0.05,))  # fmt: skip
    try:
        yield Setup(cluster, node, ns, clock, metrics, drains)
    finally:
        drains.shutdown()


def test_a_budget_blocks_the_drain_on_upstreams_cadence_until_it_is_loosened(
    setup: Setup,
) -> None:
    s, node, ns = setup, setup.node, setup.ns
    assert s.drains.idle([s.cluster.get_node(node)]), "nothing asked: a pass leaves drains alone"
    s.cluster.annotate(node, {Annotation.DESIRED_DRAIN: f"drain-{CONFIG}"})
    assert not s.drains.idle([s.cluster.get_node(node)]), "a drain asked for: a pass starts it"
    assert s.attempt() == 1
    assert not s.drains.idle([]), "an attempt kept (blocked, retried later)"
    assert s.unschedulable()
    assert Annotation.LAST_APPLIED_DRAIN not in s.annotations()
    # the pod no budget protects goes (on a real cluster its kubelet may take a moment)
    assert eventually(lambda: s.cluster.pods_on(node) == ["web-0"], 60)
    why = (f"{ns}/web-0: blocked by PodDisruptionBudget {ns}/web-pdb: The disruption budget "
           "web-pdb needs 1 healthy pods and has 1 currently")  # fmt: skip
    assert why in s.drains.blocked()[node]
    assert any(t == "Warning" and r == "DrainBlocked" and m.startswith("Drain blocked, retrying: ")
               and why in m for t, r, m in s.events())  # fmt: skip

    assert s.attempt() == 0, "the next try waits a minute"
    s.clock.now += 59
    assert s.attempt() == 0
    s.clock.now += 1
    assert s.attempt() == 1
    assert s.drains.blocked() == {node: why}
    told = len(s.events())
    s.clock.now += 60
    assert s.attempt() == 1
    assert len(s.events()) == told, "the same pods: no new Event"

    s.clock.now += 9 * 60  # failing for more than 10 minutes: every 5 minutes, with an Event
    assert s.attempt() == 1
    threshold = [m for _, r, m in s.events() if r == "DrainThresholdExceeded"]
    assert threshold == [
        "Drain failed. Drain has been failing for more than 10 minutes. Waiting 5 minutes then "
        f"retrying. Error message from drain: failed to drain node: {node} after 1s: 1 pod(s) "
        f"not evicted: {why}"
    ]
    s.clock.now += 4 * 60
    assert s.attempt() == 0
    s.clock.now += 60
    assert s.attempt() == 1
    assert s.drain_err() is None

    s.clock.now += 3600  # past the timeout: DrainFailed and mcc_drain_err, still retried
    assert s.attempt() == 1
    failed = [(t, m) for t, r, m in s.events() if r == "DrainFailed"]
    assert failed == [("Warning", f"node {node}: drain exceeded timeout: 1h0m0s. Will continue "
                                  "to retry.")]  # fmt: skip
    assert s.drain_err() == 1.0

    s.cluster.set_min_available(ns, "web-pdb", 0)  # the admin loosens the budget
    assert eventually(s.budget_allows, 60)
    for _ in range(20):  # one attempt on the fake; on a real cluster the pod may outlast one
        s.clock.now += 5 * 60
        assert s.attempt() == 1
        if Annotation.LAST_APPLIED_DRAIN in s.annotations():
            break
    assert s.annotations()[Annotation.LAST_APPLIED_DRAIN] == f"drain-{CONFIG}"
    assert eventually(lambda: s.cluster.pods_on(node) == [], 30)
    assert s.drains.blocked() == {}
    assert s.drain_err() is None, "the series goes once the drain completes"
    assert s.unschedulable()

    s.cluster.annotate(node, {Annotation.DESIRED_DRAIN: f"uncordon-{CONFIG}"})
    assert s.attempt() == 1
    assert not s.unschedulable()
    assert s.annotations()[Annotation.LAST_APPLIED_DRAIN] == f"uncordon-{CONFIG}"
    assert s.attempt() == 0, "answered: nothing more to do"


def test_the_pools_drain_timeout_and_an_uncordon_by_someone_else(setup: Setup) -> None:
    s, node = setup, setup.node
    s.cluster.annotate(node, {Annotation.DESIRED_DRAIN: f"drain-{CONFIG}"})
    assert s.attempt({node: 1800}) == 1
    s.cluster.kube.request("PATCH", f"/api/v1/nodes/{node}",
                           body={"spec": {"unschedulable": None}},
                           content_type="application/merge-patch+json")  # fmt: skip
    s.clock.now += 20 * 60
    assert s.attempt({node: 1800}) == 1
    assert s.unschedulable(), "cordoned again"
    # as upstream: this attempt still counts from the first cordon (20 minutes: the threshold)
    # but the drain begins anew at the new cordon, so its timeout counts from there
    assert [r for _, r, _ in s.events() if r != "DrainBlocked"] == ["DrainThresholdExceeded"]
    s.clock.now += 25 * 60  # 45 minutes since the first cordon, 25 since the second
    assert s.attempt({node: 1800}) == 1
    assert "DrainFailed" not in [r for _, r, _ in s.events()]
    s.clock.now += 6 * 60  # past the pool's 30 minutes
    assert s.attempt({node: 1800}) == 1
    assert [m for _, r, m in s.events() if r == "DrainFailed"] == [
        f"node {node}: drain exceeded timeout: 30m0s. Will continue to retry."
    ]
    assert s.drain_err() == 1.0


def test_a_new_request_gives_up_the_running_attempt(setup: Setup) -> None:
    """The agent's target moved on (desiredDrain changed) while pods still block: the attempt
    ends at once and the new request is worked instead."""
    s, node = setup, setup.node
    slow = DrainController(s.cluster.kube, s.metrics, s.cluster.get_node, clock=s.clock,
                           cadence=Cadence(attempt=120, evict_retry=0.1), backoff=(0.05,))  # fmt: skip
    try:
        s.cluster.annotate(node, {Annotation.DESIRED_DRAIN: f"drain-{CONFIG}"})
        slow.sync([s.cluster.get_node(node)], {})
        assert eventually(lambda: bool(slow.blocked()), 30)
        s.cluster.annotate(node, {Annotation.DESIRED_DRAIN: f"uncordon-{CONFIG}"})
        assert eventually(lambda: not slow.busy(), 30), "the attempt did not give up"
        slow.sync([s.cluster.get_node(node)], {})
        assert eventually(
            lambda: s.annotations().get(Annotation.LAST_APPLIED_DRAIN) == f"uncordon-{CONFIG}", 30
        )
        assert not s.unschedulable()
    finally:
        slow.shutdown()


def test_a_new_leader_finishes_the_drain_the_old_one_left(setup: Setup) -> None:
    """The leader stops mid-drain (its Lease lost, or SIGTERM): its attempt ends at once, and
    the next leader, knowing nothing of it, takes the request from the Node and finishes."""
    s, node, ns = setup, setup.node, setup.ns
    old = DrainController(s.cluster.kube, s.metrics, s.cluster.get_node, clock=s.clock,
                          cadence=Cadence(attempt=120, evict_retry=0.1), backoff=(0.05,))  # fmt: skip
    s.cluster.annotate(node, {Annotation.DESIRED_DRAIN: f"drain-{CONFIG}"})
    old.sync([s.cluster.get_node(node)], {})
    assert eventually(lambda: bool(old.blocked()), 30)
    old.shutdown()
    assert eventually(lambda: not old.busy(), 30), "the old leader's attempt did not end"
    assert Annotation.LAST_APPLIED_DRAIN not in s.annotations()
    s.cluster.set_min_available(ns, "web-pdb", 0)
    assert eventually(s.budget_allows, 60)
    for _ in range(20):
        s.clock.now += 60
        assert s.attempt() == 1
        if Annotation.LAST_APPLIED_DRAIN in s.annotations():
            break
    assert s.annotations()[Annotation.LAST_APPLIED_DRAIN] == f"drain-{CONFIG}"
    assert s.unschedulable()
