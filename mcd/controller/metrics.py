"""Per-pool rollout metrics: what the controller knows after each pass, as Prometheus series.

Upstream's ``mco_*`` machine counts (``pkg/controller/common/metrics.go``), and mcd's own
rollout progress: nodes left, the target rendered config, whether and why no node gets the
target now (``paused``, a node Degraded on the target, an invalid ``maxUnavailable``), when the
pool last made progress, an estimate of completion, each pool's members (for joins with the
agents' per-node series), their states and the drains in flight or blocked.

Every series is rebuilt from the last pass (a custom collector): a pool, a node or a reason
that went away leaves no stale series behind. :func:`pool_rollout` is the pure part (one
pool's figures from its report, members and the previous figures); :class:`RolloutMetrics`
keeps the figures between passes and exports them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from mcd.model.pool.pools import SelectorError, name_of, primary_pool, target_of
from mcd.model.pool.rollout import HALTED, INVALID, NODE_FAILING, PAUSED, Rollout
from mcd.model.vocabulary import Annotation, NodeState


class PoolReport(Protocol):
    """What a pass reports of one pool (:class:`mcd.controller.sync.PoolReport`; not
    imported: sync imports the drain controller, which imports these metrics)."""

    name: str
    rollout: Rollout
    status: Obj


Obj = dict[str, Any]

PAUSE_REASONS = {
    PAUSED: "paused",
    NODE_FAILING: "node-degraded",
    INVALID: "invalid-max-unavailable",
    HALTED: "rollout-halted",
}
"""``mcd_pool_paused{reason}``: why no node gets the target now (a rollout that waits for a
free slot or a maintenance window is not paused)."""
NODE_STATES: tuple[str, ...] = tuple(
    str(s)
    for s in (NodeState.DONE, NodeState.WORKING, NodeState.DEGRADED, NodeState.UNRECONCILABLE)
)
UPSTREAM_COUNTS = {
    "mco_machine_count": ("machineCount", "total number of machines in a specified pool"),
    "mco_updated_machine_count": (
        "updatedMachineCount", "total number of updated machines in specified pool"),
    "mco_degraded_machine_count": (
        "degradedMachineCount", "total number of degraded machines in specified pool"),
    "mco_unavailable_machine_count": (
        "unavailableMachineCount", "total number of unavailable machines in specified pool"),
}  # fmt: skip


@dataclass(frozen=True)
class PoolRollout:
    """One pool's figures after a pass."""

    name: str
    counts: Mapping[str, int]
    target: str = ""
    nodes_left: int = 0
    paused: str = ""
    """The ``PAUSE_REASONS`` value, '' while the rollout may go on."""
    held_by_window: int = 0
    members: tuple[str, ...] = ()
    states: Mapping[str, int] = field(default_factory=dict)
    drains_in_flight: int = 0
    drains_blocked: int = 0
    progress_at: float = 0.0
    """When the pool last made progress (a new target, a node updated or targeted, or
    nothing left to do); the controller's first pass counts as progress."""
    started_at: float = 0.0
    """When the pool's current target was first seen."""
    updated_since_start: int = 0
    """Nodes that reached the target since ``started_at``."""

    @property
    def eta(self) -> float | None:
        """The estimated completion time, from the pace since the target was first seen
        (None until a node reached it, or once nothing is left)."""
        if self.nodes_left <= 0 or self.updated_since_start <= 0:
            return None
        pace = (self.progress_at - self.started_at) / self.updated_since_start
        return self.progress_at + pace * self.nodes_left


def _int(value: object) -> int:
    return value if isinstance(value, int) else 0


def pool_rollout(
    report: PoolReport,
    target: str,
    members: Sequence[Mapping[str, Any]],
    blocked: Mapping[str, str],
    previous: PoolRollout | None,
    now: float,
    per_node: bool = True,
) -> PoolRollout:
    """One pool's figures: ``target`` is its rendered config, ``members`` its Nodes,
    ``blocked`` the drains pods hold (:meth:`DrainController.blocked`), ``previous`` the
    figures of the last pass (None on the first); without ``per_node`` the figures read
    from the members (their names, states and drains) are left out."""
    status = report.status
    counts = {metric: _int(status.get(key)) for metric, (key, _help) in UPSTREAM_COUNTS.items()}
    total, updated = counts["mco_machine_count"], counts["mco_updated_machine_count"]
    left = max(0, total - updated)
    figures = PoolRollout(
        name=report.name, counts=counts, target=target, nodes_left=left,
        paused=PAUSE_REASONS.get(report.rollout.blocked, ""),
        held_by_window=len(report.rollout.held), states=dict.fromkeys(NODE_STATES, 0),
    )  # fmt: skip
    if per_node:
        figures = with_members(figures, members, blocked)
    if previous is None or previous.target != target:
        return replace(figures, progress_at=now, started_at=now)
    progressed = (
        updated > previous.counts["mco_updated_machine_count"]
        or bool(report.rollout.targets)
        or left == 0
    )
    return replace(
        figures,
        progress_at=now if progressed else previous.progress_at,
        started_at=previous.started_at,
        updated_since_start=previous.updated_since_start
        + max(0, updated - previous.counts["mco_updated_machine_count"]),
    )


def with_members(
    figures: PoolRollout, members: Sequence[Mapping[str, Any]], blocked: Mapping[str, str]
) -> PoolRollout:
    """The figures read from the members: their names, states and drains."""
    names = tuple(sorted(name_of(n) for n in members))
    states: dict[str, int] = dict.fromkeys(NODE_STATES, 0)
    in_flight = 0
    for node in members:
        annotations = (node.get("metadata") or {}).get("annotations") or {}
        state = str(annotations.get(Annotation.STATE) or NodeState.DONE)
        states[state] = states.get(state, 0) + 1
        desired = annotations.get(Annotation.DESIRED_DRAIN, "")
        if desired.startswith("drain-") and desired != annotations.get(
            Annotation.LAST_APPLIED_DRAIN
        ):
            in_flight += 1
    return replace(figures, members=names, states=states, drains_in_flight=in_flight,
                   drains_blocked=sum(1 for n in names if n in blocked))  # fmt: skip


PROGRESS = "RolloutProgress"
"""The pool condition with the estimate of completion (True while there is one)."""


@dataclass
class Estimates:
    """The estimate of completion for the pool's status (the same figures as the metric,
    :func:`pool_rollout`, kept by the pass itself)."""

    _figures: dict[str, PoolRollout] = field(default_factory=dict)

    def note(self, report: PoolReport, target: str, members: Sequence[Mapping[str, Any]],
             now: float) -> str:  # fmt: skip
        """``estimated completion T (N nodes left, P per node)``, '' without one yet."""
        figures = pool_rollout(report, target, members, {}, self._figures.get(report.name), now,
                               per_node=False)  # fmt: skip
        self._figures[report.name] = figures
        eta = figures.eta
        if eta is None:
            return ""
        pace = (figures.progress_at - figures.started_at) / max(1, figures.updated_since_start)
        when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(eta))
        return (
            f"estimated completion {when} ({figures.nodes_left} nodes left, {pace:.0f}s per node)"
        )


class RolloutMetrics(Collector):
    """Registered on the controller's registry; :meth:`observe` after each pass."""

    def __init__(self, registry: CollectorRegistry, clock: Callable[[], float] = time.time):
        self.clock = clock
        self._lock = threading.Lock()
        self._pools: dict[str, PoolRollout] = {}
        self._sources: dict[str, tuple[Sequence[Mapping[str, Any]], Mapping[str, str]]] = {}
        registry.register(self)

    def observe(
        self,
        pools: Sequence[Obj],
        nodes: Sequence[Obj],
        reports: Sequence[PoolReport],
        blocked: Mapping[str, str],
        pool_of: Mapping[str, str] | None = None,
        partial: bool = False,
        members_of: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    ) -> None:
        """``pool_of``: each node's pool, as the pass found it, or ``members_of``: each
        pool's nodes (else each node's primary pool is worked out again here);
        ``partial``: the pass synced only the pools it reports, the others keep their
        figures (while they exist)."""
        by_name = {name_of(p): p for p in pools}
        now = self.clock()
        figures: dict[str, PoolRollout] = {}
        sources: dict[str, tuple[Sequence[Mapping[str, Any]], Mapping[str, str]]] = {}
        found: dict[str, list[Mapping[str, Any]]] = {}
        # each node's primary pool once (nodes_for_pool per pool is N x P)
        for node in nodes if members_of is None else ():
            if pool_of is not None:
                primary_name = pool_of.get(name_of(node))
            else:
                try:
                    primary = primary_pool(node, pools)
                except SelectorError:
                    continue
                primary_name = name_of(primary) if primary is not None else None
            if primary_name is not None:
                found.setdefault(primary_name, []).append(node)
        for report in reports:
            pool = by_name.get(report.name)
            if pool is None:
                continue
            members = (members_of or found).get(report.name, [])
            previous = self._pools.get(report.name)
            figures[report.name] = pool_rollout(  # the members' figures when scraped
                report, target_of(pool), members, blocked, previous, now, per_node=False
            )
            sources[report.name] = (members, blocked)
        with self._lock:
            if partial:
                figures = {**{n: f for n, f in self._pools.items() if n in by_name}, **figures}
                sources = {**{n: s for n, s in self._sources.items() if n in by_name}, **sources}
            self._pools, self._sources = figures, sources

    def figures(self) -> dict[str, PoolRollout]:
        """The figures of the last pass; those read from each pool's members are worked out
        here, when scraped (every pass, at 5,000 nodes, they were a seventh of its CPU)."""
        with self._lock:
            pools, sources = dict(self._pools), dict(self._sources)
        return {n: with_members(f, *sources[n]) if n in sources else f for n, f in pools.items()}

    def describe(self) -> Iterator[Metric]:
        return self._families({})

    def collect(self) -> Iterator[Metric]:
        return self._families(self.figures())

    def _families(self, pools: Mapping[str, PoolRollout]) -> Iterator[Metric]:
        def family(name: str, doc: str, labels: Sequence[str]) -> GaugeMetricFamily:
            return GaugeMetricFamily(name, doc, labels=list(labels))

        upstream = {m: family(m, h, ["pool"]) for m, (_k, h) in UPSTREAM_COUNTS.items()}
        left = family("mcd_pool_nodes_left", "Nodes of the pool not yet on its target", ["pool"])
        target = family(
            "mcd_pool_target_config", "The pool's target rendered config (always 1)",
            ["pool", "config"],
        )  # fmt: skip
        paused = family(
            "mcd_pool_paused",
            "1 while no node gets the pool's target, with why (paused, node-degraded, "
            "invalid-max-unavailable); 0 with reason '' otherwise",
            ["pool", "reason"],
        )
        held = family("mcd_pool_nodes_held_by_window",
                      "Nodes a closed maintenance window holds", ["pool"])  # fmt: skip
        progress = family("mcd_pool_last_progress_timestamp_seconds",
                          "When the pool's rollout last made progress", ["pool"])  # fmt: skip
        eta = family("mcd_pool_rollout_estimated_completion_timestamp_seconds",
                     "When the rollout should end, at the pace since its target was set",
                     ["pool"])  # fmt: skip
        member = family("mcd_pool_node", "A node of the pool (always 1)", ["pool", "node"])
        states = family(
            "mcd_pool_nodes_by_state", "Nodes of the pool by their state annotation",
            ["pool", "state"],
        )  # fmt: skip
        drains = family("mcd_pool_drains",
                        "Drains of the pool's nodes in flight and blocked by pods",
                        ["pool", "state"])  # fmt: skip
        for name, p in sorted(pools.items()):
            for metric, fam in upstream.items():
                fam.add_metric([name], p.counts.get(metric, 0))
            left.add_metric([name], p.nodes_left)
            if p.target:
                target.add_metric([name, p.target], 1)
            paused.add_metric([name, p.paused], 1 if p.paused else 0)
            held.add_metric([name], p.held_by_window)
            progress.add_metric([name], p.progress_at)
            if p.eta is not None:
                eta.add_metric([name], p.eta)
            for node in p.members:
                member.add_metric([name, node], 1)
            for state, count in sorted(p.states.items()):
                states.add_metric([name, state], count)
            drains.add_metric([name, "in_flight"], p.drains_in_flight)
            drains.add_metric([name, "blocked"], p.drains_blocked)
        yield from upstream.values()
        yield from (left, target, paused, held, progress, eta, member, states, drains)
