"""One pass over every pool: render, roll out, report (upstream's render and node controllers).

Reads come from the informer caches; each write is one request. Per pool:

1. render the MachineConfigs its ``machineConfigSelector`` selects; create the rendered
   config once (never changed afterwards) and point ``spec.configuration`` at it; a
   render error is ``RenderDegraded`` and the pool keeps its previous target;
2. choose the nodes that get ``desiredConfig`` now (:func:`mcd.model.pool.rollout.plan_rollout`),
   unless the pool is paused;
3. write the status (counts and conditions) when it changed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from mcd.cluster.api import ApiError, Obj
from mcd.cluster.pools import PoolWriter
from mcd.controller import drainorder
from mcd.controller.conditions import applicability, drain, hygiene, synchronizers
from mcd.controller.conditions.window import WindowWaits
from mcd.controller.drain import DrainPolicy
from mcd.controller.holds.step import HoldStep, costs_of
from mcd.controller.metrics import PROGRESS, Estimates
from mcd.controller.osreboots import step as osreboots
from mcd.controller.policy import PolicyStep, Restarts
from mcd.controller.refill.handout import HandOut
from mcd.controller.refill.step import RefillStep
from mcd.controller.refill.taints import Taints
from mcd.controller.rendering import RenderStep
from mcd.controller.writes import InFlight, NodeWrites
from mcd.model.drain.budgets import released_from
from mcd.model.drain.settings import drain_settings
from mcd.model.planning.plan import Cost
from mcd.model.pool.canary import Gate
from mcd.model.pool.hygiene import Membership, membership, refreshed
from mcd.model.pool.pools import (
    NodeView,
    has_update_taint,
    name_of,
    target_of,
)
from mcd.model.pool.rollout import (
    INVALID,
    MAINTENANCE_WINDOW,
    Rollout,
    calculate_status,
    plan_rollout,
    set_condition,
)
from mcd.model.pool.windows import (
    WINDOW_ANNOTATION,
    WindowError,
    WindowState,
    parse_window,
    pool_window,
)

log = logging.getLogger(__name__)

Clock = Callable[[], datetime]
FULL_EVERY = 2.0
"""Seconds a pool's status and conditions may wait while passes only refill its slots (at
5,000 nodes the rest of a pass was half its CPU, and slots free several times a second); the
controller's periodic full pass comes as often (``min(resync, retry)``, 2 s)."""


@dataclass
class Snapshot:
    """What the caches hold at the start of a pass."""

    pools: list[Obj]
    configs: dict[str, Obj]
    nodes: list[Obj]
    taken: float = field(default_factory=time.monotonic)
    """When the caches were read (before the reads): :class:`InFlight` keeps a target until
    a snapshot taken after its write was answered."""
    refill_only: bool = False
    """Only Nodes changed since the last pass, none between pools: a pool fully synced less
    than :data:`FULL_EVERY` ago may only have its free slots refilled (its status and the
    rest wait for a later pass)."""
    previous: Membership | None = None
    """The last pass's membership, when no pool and no node was added, removed or relabelled
    since (its nodes are refreshed: :func:`mcd.model.pool.hygiene.refreshed`)."""
    _membership: Membership | None = None

    @property
    def membership(self) -> Membership:
        """Every node's pool (:func:`mcd.model.pool.hygiene.membership`), computed once."""
        if self._membership is None:
            self._membership = (membership(self.pools, self.nodes) if self.previous is None
                                else refreshed(self.previous, self.nodes))  # fmt: skip
        return self._membership


@dataclass
class PoolReport:
    name: str
    rollout: Rollout
    status: Obj
    next_window: datetime | None = None
    refilled_only: bool = False
    """The pass only handed out targets (``status`` is the pool's as it was)."""


@dataclass
class Syncer:
    writer: PoolWriter
    version: str
    clock: Clock = field(default=lambda: datetime.now(UTC))
    observe_config: Callable[[Obj], None] = field(default=lambda _o: None)
    observe_pool: Callable[[Obj], None] = field(default=lambda _o: None)
    observe_node: Callable[[Obj], None] = field(default=lambda _o: None)
    """Each written object goes back into the caches at once, so the next pass never
    counts a node it just targeted as still waiting (which could exceed maxUnavailable)."""
    drain_blocked: Callable[[], Mapping[str, str]] = field(default=lambda: {})
    """What holds each node's drain now (:meth:`mcd.controller.drain.DrainController.blocked`)."""
    drain_forecast: Callable[[], Mapping[str, str]] = field(default=lambda: {})
    """Whose drain a budget would block now (:class:`mcd.cluster.drain.forecast.DrainForecast`):
    those nodes go last."""
    drain_released: Callable[[], Mapping[str, str]] = field(default=lambda: {})
    """Whose drain ran past the pool's own timeout (:meth:`~mcd.controller.drain.
    DrainController.released`): their slot is given back (:func:`drainorder.release`)."""
    observe_alerts: Callable[[Mapping[str, int]], None] = field(default=lambda _a: None)
    """``mcc_pool_alert`` per node (:class:`mcd.controller.poolalert.PoolAlertMetric`)."""
    render_step: RenderStep | None = None
    pod_restarts: Restarts = field(default=lambda _n: {})
    """Node -> (container restarts, pods crash-looping) (:class:`mcd.cluster.podhealth.
    PodRestarts`), for the pools with a rollout policy."""
    policy_step: PolicyStep | None = None
    holds: HoldStep | None = None
    estimates: Estimates = field(default_factory=Estimates)
    pinned: synchronizers.PinnedRollup = field(default_factory=synchronizers.PinnedRollup)
    window_waits: WindowWaits = field(default_factory=WindowWaits)
    _writes: NodeWrites = field(default_factory=NodeWrites)
    full_every: float = FULL_EVERY
    """Seconds a pool's status may wait while passes only refill its slots (the controller
    sets the period of its whole passes: :attr:`mcd.controller.dirty.DirtyPools.period`)."""
    refill: RefillStep = field(default_factory=RefillStep)
    """Each pool's ledger, for the passes that only refill slots (:meth:`refill_pass`)."""
    _inflight: InFlight = field(default_factory=InFlight)
    _synced_at: dict[str, float] = field(default_factory=dict)
    _views: dict[str, tuple[str, NodeView, bool]] = field(default_factory=dict)
    pending: set[str] = field(default_factory=set)
    """The pools the last pass left work for (taints beyond :data:`TAINT_BATCH`)."""
    background_taints: bool = False
    """Taints written in the background, a few queued at a time (:meth:`NodeWrites.later`):
    the controller's (200 a pass, waited for, held every slot freed meanwhile for 1-3 s at
    5,000 nodes); else :data:`TAINT_BATCH` a pass, waited for."""
    background_targets: bool = False
    """A pass hands its targets to the writers and goes on (the controller's: a pass that
    waited on a wave's writes held every slot freed meanwhile); they count as targeted
    until a pass reads them (:class:`InFlight`)."""

    def _view(self, node: Mapping[str, Any]) -> NodeView:
        """``NodeView.of(node)``, kept per resourceVersion (a pass reads every node; most
        have not changed since the last one)."""
        return self._facts(node)[0]

    def _facts(self, node: Mapping[str, Any]) -> tuple[NodeView, bool]:
        """The node's view and whether it carries the update taint, kept per resourceVersion."""
        meta = node.get("metadata") or {}
        name, version = str(meta.get("name") or ""), str(meta.get("resourceVersion") or "")
        cached = self._views.get(name)
        if cached is not None and version and cached[0] == version:
            return cached[1], cached[2]
        view, tainted = NodeView.of(node), has_update_taint(node)
        self._views[name] = (version, view, tainted)
        return view, tainted

    def __post_init__(self) -> None:
        if self.render_step is None:
            self.render_step = RenderStep(
                self.writer, self.version, self.observe_config, self.observe_pool
            )
        if self.policy_step is None:
            self.policy_step = PolicyStep(
                self.writer, self.pod_restarts, self.observe_pool, self.observe_node
            )
        self.holds = self.holds or HoldStep(self.writer)
        self._hand_out = HandOut(self.writer, self._writes, self._inflight, self.observe_node,
                                 self.background_targets)  # fmt: skip
        self.taints = Taints(self.writer, self._writes, self._inflight, self.observe_node,
                             self._facts, self.background_taints)  # fmt: skip

    def stop(self) -> None:
        """No write of this Syncer's goes out any more (:meth:`NodeWrites.cancel`)."""
        self._writes.cancel()

    def sync_all(self, snap: Snapshot, only: Collection[str] | None = None) -> list[PoolReport]:
        """Every pool in turn (``only`` those named: :mod:`mcd.controller.dirty`); whatever
        one pool raises is logged and the others go on."""
        reports, self.pending = [], set()
        self.observe_alerts(snap.membership.alerts)
        if len(self._views) > 2 * len(snap.nodes) + 100:  # nodes gone: forget their views
            names = {name_of(n) for n in snap.nodes}
            self._views = {n: v for n, v in self._views.items() if n in names}
        for pool in [p for p in snap.pools if only is None or name_of(p) in only]:
            try:
                reports.append(self.sync_pool(pool, snap))
            except ApiError as e:
                log.warning("Pool %s: sync failed: %s", name_of(pool), e)
            except Exception:  # a careless pool must never stop the others' pass
                log.exception("Pool %s: sync failed unexpectedly", name_of(pool))
        return reports

    # -- one pool ---------------------------------------------------------------------

    def sync_pool(self, pool: Obj, snap: Snapshot) -> PoolReport:
        name = name_of(pool)
        spec = pool.get("spec") or {}
        now = self.clock()
        stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
        old = pool.get("status") or {}
        assert self.render_step is not None and self.policy_step is not None
        self.refill.drop(name)  # kept again once this sync got through its rollout
        pool = self.render_step(pool, snap.configs, stamp)
        invalid = snap.membership.invalid.get(name)
        if invalid:
            status, written = hygiene.invalid_selector(self.writer, pool, old, invalid, stamp)
            if written is not None:
                self.observe_pool(written)
            return PoolReport(name, Rollout(blocked=INVALID, error=invalid), status)
        views = [self._view(n) for n in snap.membership.nodes_of(name)]
        members = {name_of(n): n for n in snap.membership.nodes_of(name)}
        flying = self._inflight.of(members, snap.taken)
        if flying:  # handed to the writers, not yet read back: targeted
            views = [replace(v, desired=flying[v.name]) if v.name in flying else v for v in views]
        window, window_error = pool_window(pool, now)
        latest = dict(members)  # the Nodes written in this pass replace theirs
        gate, policy_error = self.policy_step.gate(pool, views, latest, now)
        rollout = Rollout()
        if not hygiene.selecting_all(self.writer, pool):  # upstream's SelectingAll: no rollout
            rollout = self._roll_out(pool, views, snap, window, latest, gate, policy_error)
            self.window_waits(self.writer, pool, rollout, window)
            recent = snap.taken - self._synced_at.get(name, float("-inf")) < self.full_every
            if rollout.targets and snap.refill_only and recent:
                self.refill.keep(pool, views, {*flying, *rollout.targets}, rollout.targets)
                return PoolReport(name, rollout, old, refilled_only=True)
            if not spec.get("paused") and target_of(pool):  # after: a node targeted now
                cached = snap.membership.nodes_of(name)  # needs no taint on and off
                if not self.taints.sync(pool, cached, latest, flying):
                    self.pending.add(name)
        if rollout.targets:
            target, chosen = target_of(pool), set(rollout.targets)
            views = [replace(v, desired=target) if v.name in chosen else v for v in views]
        self.refill.keep(pool, views, {*flying, *rollout.targets})  # a selecting-all: none
        status = calculate_status(pool, views, stamp, rollout=rollout, window=window)
        found = status["conditions"]
        if window_error:
            set_condition(found, MAINTENANCE_WINDOW, False, "InvalidWindow", window_error, stamp)
        drain.conditions(self.writer, self.drain_blocked(), pool, views, found, stamp)
        self.policy_step.report(pool, gate, policy_error, found, stamp)
        self.holds.report(pool, rollout, found, stamp)  # type: ignore[union-attr]
        osreboots.report(self.writer, pool, rollout, found, stamp, self.observe_node, latest)
        note = self.estimates.note(PoolReport(name, rollout, status), target_of(pool),
                                   snap.membership.nodes_of(name), now.timestamp())  # fmt: skip
        if note:  # a condition of its own: Updating's message keeps upstream's words
            set_condition(found, PROGRESS, True, "Estimated", note, stamp)
        else:
            found[:] = [c for c in found if c.get("type") != PROGRESS]
        hygiene.conditions(name, snap.membership, snap.nodes, found, stamp)
        applicability.update_condition(  # nodes whose host cannot apply the target (issue 34)
            pool, snap.membership.nodes_of(name), snap.configs, found, stamp
        )
        status = self.pinned(self.writer, pool, list(members.values()), status, self.observe_pool)
        if any(old.get(k) != v for k, v in status.items()):
            updated = self.writer.set_status(name, status)
            self.observe_pool(updated)
            before = (old.get("configuration") or {}).get("name")
            after = (status.get("configuration") or {}).get("name")
            if after and after != before:
                self.writer.event(
                    pool, "Completed", f"Pool {name} has completed update to MachineConfig {after}"
                )
        self._synced_at[name] = snap.taken
        return PoolReport(name, rollout, status, window.opens_at if window else None)

    def refill_pass(
        self, pools: list[Obj], changed: Collection[str], lookup: Callable[[str], Obj | None],
        taken: float,
    ) -> list[PoolReport] | None:  # fmt: skip
        """A pass after nothing but Node changes that moved no node between pools: each
        of ``pools`` (those the changes touch) refilled from its ledger, touching only the
        changed nodes and the targets (``lookup``: a Node in the cache). None when one needs
        a whole sync (:meth:`RefillStep.plans`; drains held or released): nothing written."""

        def view_of(node: str) -> NodeView | None:
            return None if (obj := lookup(node)) is None else self._view(obj)

        def whole(pool: Obj) -> bool:  # gates, or no whole sync for FULL_EVERY
            recent = taken - self._synced_at.get(name_of(pool), float("-inf")) < self.full_every
            return not recent or self.holds.applies(pool)  # type: ignore[union-attr]

        if self.drain_released():
            return None
        plans = self.refill.plans(pools, changed, view_of, self._inflight, taken, whole)
        if plans is None or self.drain_forecast():
            return None
        reports = []
        for pool, targets in plans:
            latest: dict[str, Mapping[str, Any]] = {t: n for t in targets if (n := lookup(t))}
            self.refill.handed(name_of(pool), self._hand_out(pool, targets, latest))
            reports.append(PoolReport(name_of(pool), Rollout(targets=targets),
                                      pool.get("status") or {}, refilled_only=True))  # fmt: skip
        for pool in pools:  # after the targets: the next taints the last whole sync left
            self.taints.more(pool, lookup)
        return reports

    def _roll_out(
        self, pool: Obj, views: list[NodeView], snap: Snapshot, window: WindowState | None,
        latest: dict[str, Mapping[str, Any]], gate: Gate | None = None, policy_error: str = "",
    ) -> Rollout:  # fmt: skip
        name, target = name_of(pool), target_of(pool)
        costs: dict[str, Cost | None] = {}
        rebootless_anytime, holds = True, self.holds or HoldStep(self.writer)
        if window is not None and not window.open:
            text = ((pool.get("metadata") or {}).get("annotations") or {}).get(WINDOW_ANNOTATION)
            try:
                rebootless_anytime = parse_window(str(text)).rebootless_anytime
            except WindowError:
                rebootless_anytime = False
        if (window is not None and not window.open) or holds.applies(pool):
            costs = costs_of(snap.configs, views, target)  # what waits for a window or a gate
        released = self.drain_released()
        if released:
            members = [latest.get(v.name) or {} for v in views]
            timeout = drain_settings((pool.get("metadata") or {}).get("annotations") or {}).timeout
            for done in drainorder.release(self.writer, pool, members, released, timeout):
                self.observe_node(done)
                latest[name_of(done)] = done
            views = [NodeView.of(latest.get(v.name) or {}) if v.name in released else v
                     for v in views]  # fmt: skip
        forecast = self.drain_forecast() if any(v.desired != target for v in views) else {}
        rollout = holds.plan(pool, lambda hold, gated: plan_rollout(  # the gates' one place
            pool, views, costs=costs, window=window, rebootless_anytime=rebootless_anytime,
            drain_blocked=forecast, reboots=osreboots.demand(pool, views, latest, self.clock()),
            released=released_from(latest, target),
            halted=bool(policy_error) or (gate is not None and gate.halted),
            only=gate.only if gate is not None else None, hold=hold, gated=gated,
        ))  # fmt: skip
        if rollout.error:
            log.warning("Pool %s: %s", name, rollout.error)

        assert self.policy_step is not None
        self.policy_step.targeted(pool, rollout.targets, views)  # restarts before the update
        written = self._hand_out(pool, rollout.targets, latest)
        return rollout if self.background_targets else replace(rollout, targets=written)


def drain_timeouts(snap: Snapshot) -> dict[str, float]:
    """Each pool member's drain timeout (its primary pool's ``drain-timeout``)."""
    return {n: p.timeout for n, p in drain_policies(snap).items()}


def drain_policies(snap: Snapshot) -> dict[str, DrainPolicy]:
    """Each pool member's drain rules (:func:`drainorder.drain_policies`)."""
    return drainorder.drain_policies(snap.pools, snap.membership)
