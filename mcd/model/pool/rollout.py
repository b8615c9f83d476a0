"""Rollout decisions and pool status, as pure functions of a pool and its nodes.

Upstream's node controller (``getAllCandidateMachines``, ``updateCandidateMachines``,
``calculateStatus``), with two deliberate differences:

* a node Degraded (or Unreconcilable) on the pool's target config stops the rollout: no
  further node gets ``desiredConfig`` until it recovers (upstream only counts it against
  ``maxUnavailable``); a node degraded on an older target is still a candidate, so a
  fixed config rolls out to it;
* a maintenance window (:mod:`mcd.model.pool.windows`) holds updates that drain or reboot;
* a node that failed a target the pool no longer wants (Degraded or Unreconcilable with
  ``currentConfig != desiredConfig``, upstream ``IsNodeMCDFailing``) and is cordoned or
  NotReady is retargeted first and costs no capacity (:func:`stranded_on_old_target`).
  Upstream's ``IsUnavailableForUpdate`` says a failing node "can safely be retargeted", but
  ``getAllCandidateMachines`` then takes only ``IsNodeReady`` (Ready and schedulable) nodes,
  so a canary left Degraded and cordoned by its failed update waits for a hand ``uncordon``
  before a rollback reaches it. Such a node is counted unavailable already and stays so until
  it is Done on the new target: the pool never has more than ``maxUnavailable`` nodes out.
  Nodes upstream skips for other reasons (NotReady and not failing, told a target and not yet
  started) are still skipped.

``paused`` stops exactly the ``desiredConfig`` writes: the status is still computed and an
update in progress finishes.
"""

from __future__ import annotations

import copy
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mcd.model.planning.plan import Cost
from mcd.model.pool.hygiene import cap
from mcd.model.pool.pools import NodeView, max_unavailable, target_of, upstream_order
from mcd.model.pool.windows import WindowState
from mcd.model.reboots.schedule import RebootDemand, choose
from mcd.model.text import goquote

Obj = dict[str, Any]

UPDATED, UPDATING, DEGRADED = "Updated", "Updating", "Degraded"
NODE_DEGRADED, RENDER_DEGRADED = "NodeDegraded", "RenderDegraded"
MAINTENANCE_WINDOW = "MaintenanceWindow"

# Why no further node gets desiredConfig now (the Rollout.blocked values).
UNCONFIGURED = "unconfigured"
PAUSED = "paused"
NODE_FAILING = "degraded"
NO_CAPACITY = "capacity"
WINDOW = "window"
INVALID = "invalid"
HALTED = "halted"
"""The pool's rollout policy halted it (:mod:`mcd.model.pool.canary`)."""
CANARY_WAVE = "canary"
"""Only the canary wave may get the target now (it updates or soaks)."""
HELD = "held"
"""A gate of the rollout policy holds every node that could go (:mod:`mcd.model.holds`)."""


@dataclass(frozen=True)
class Rollout:
    """What the controller does next for one pool."""

    targets: tuple[str, ...] = ()
    """Nodes that get ``desiredConfig`` now, in upstream order."""
    waiting: tuple[str, ...] = ()
    """Nodes that still need the target config and were not chosen."""
    held: tuple[str, ...] = ()
    """Of those, the ones a closed maintenance window holds."""
    capacity: int = 0
    blocked: str = ""
    failing: tuple[str, ...] = ()
    error: str = ""
    """Why the pool cannot roll out at all (an invalid ``maxUnavailable``)."""
    last: tuple[str, ...] = ()
    """Of the waiting nodes, those put last: a budget would block their drain now, or their
    drain timed out (released)."""
    gated: tuple[str, ...] = ()
    """Of the waiting nodes, those a gate held back now (``hold`` or ``gated``)."""
    reboots: tuple[str, ...] = ()
    """Nodes whose OS asked for a reboot that get a slot for it now (:mod:`mcd.model.reboots`)."""
    reboot_waits: Mapping[str, str] = field(default_factory=dict)
    """Nodes whose OS asked for a reboot that wait, each with why."""


def needs_window(cost: Cost | None, rebootless_anytime: bool) -> bool:
    """Does an update of this cost wait for the maintenance window? Unknown cost: yes."""
    if cost is None or cost >= Cost.DRAIN:
        return True
    return not rebootless_anytime and cost > Cost.NONE


def plan_rollout(
    pool: Mapping[str, Any],
    nodes: Sequence[NodeView],
    *,
    costs: Mapping[str, Cost | None] | None = None,
    window: WindowState | None = None,
    rebootless_anytime: bool = True,
    drain_blocked: Mapping[str, str] | None = None,
    released: Collection[str] = (),
    halted: bool = False,
    only: Collection[str] | None = None,
    hold: str = "",
    gated: Collection[str] = (),
    reboots: RebootDemand | None = None,
) -> Rollout:
    """The nodes to move to the pool's target config now.

    ``costs`` maps node names to their update's cost (only consulted with a ``window``);
    an invalid ``maxUnavailable`` stops the rollout with ``error`` set. Drain-aware order:
    nodes whose drain a budget would block now (``drain_blocked``) come after the others
    (upstream order within each group); nodes whose drain timed out (``released``) are
    taken only once no other node waits. ``halted`` (the rollout policy halted the pool)
    stops the rollout like ``paused``; ``only`` limits the candidates to a canary wave.
    A gate (:mod:`mcd.model.holds`) holds the candidates whose update drains or reboots (by
    ``costs``; unknown: it does): all of them while ``hold`` says why, and those ``gated``.
    ``reboots``: the nodes whose OS asks for a reboot are candidates too, through the same
    filters, after the updates, in the slots the updates leave (``Rollout.reboots``).
    """
    target = target_of(pool)
    if not target:
        return Rollout(blocked=UNCONFIGURED)
    spec = pool.get("spec") or {}
    need = [n for n in nodes if n.desired != target]
    waiting = tuple(n.name for n in upstream_order(need))
    demand = reboots or RebootDemand()
    if spec.get("paused"):
        return Rollout(waiting=waiting, blocked=PAUSED, reboot_waits=demand.waiting("pool paused"))
    if halted:
        why = "rollout halted (see RolloutHalted)"
        return Rollout(waiting=waiting, blocked=HALTED, reboot_waits=demand.waiting(why))
    try:
        limit = max_unavailable(spec.get("maxUnavailable"), len(nodes))
    except ValueError as e:
        why = f"invalid maxUnavailable: {e}"
        return Rollout(waiting=waiting, blocked=INVALID, error=str(e),
                       reboot_waits=demand.waiting(why))  # fmt: skip
    failing = tuple(n.name for n in nodes if n.desired == target and n.degraded)
    if failing:
        why = f"{', '.join(failing[:3])} failed to apply {target}"
        return Rollout(waiting=waiting, blocked=NODE_FAILING, failing=failing,
                       reboot_waits=demand.waiting(why))  # fmt: skip
    unavailable = sum(1 for n in nodes if n.unavailable)
    capacity = limit - unavailable
    # Upstream: nodes failing this config count against availability too.
    capacity -= sum(1 for n in nodes if n.desired == target and n.failing)
    # Failed on a target the pool no longer wants and left cordoned or NotReady: counted
    # unavailable above already, so retargeting it costs no capacity; it goes first.
    stranded = [n for n in need if stranded_on_old_target(n)]
    wanted = demand.wanted  # OS reboots: the same candidates' filters, below
    os_wanted = [n for n in nodes if n.name in wanted and n.desired == target]
    on_target = {n.name for n in os_wanted}
    os_waits = dict.fromkeys(sorted(wanted - on_target), f"the update to {target} first")
    os_waits |= {n.name: "node not Ready or cordoned" for n in os_wanted
                 if not n.schedulable_and_ready}  # fmt: skip
    # a node rebooting for its OS is no candidate until it answered (it may not be cordoned yet)
    candidates = [n for n in need + os_wanted if n.schedulable_and_ready and not n.rebooting]
    outside_wave = False
    if only is not None:
        outside_wave = any(n.name not in only and n.name not in on_target
                           for n in candidates + stranded)  # fmt: skip
        os_waits |= {n.name: "outside the canary wave" for n in candidates
                     if n.name in on_target and n.name not in only}  # fmt: skip
        candidates = [n for n in candidates if n.name in only]
        stranded = [n for n in stranded if n.name in only]
    held: list[str] = []
    if window is not None and not window.open:
        held = [n.name for n in candidates + stranded
                if n.name in on_target or _held(n, costs, rebootless_anytime)]  # fmt: skip
        candidates = [n for n in candidates if n.name not in held]
        stranded = [n for n in stranded if n.name not in held]
        os_waits |= {n: window.describe() for n in held if n in on_target}
        held = [n for n in held if n not in on_target]
    stopped: list[str] = []
    if hold or gated:
        stopped = [n.name for n in candidates + stranded
                   if (hold or n.name in gated)
                   and (n.name in on_target or _held(n, costs, True))]  # fmt: skip
        candidates = [n for n in candidates if n.name not in stopped]
        stranded = [n for n in stranded if n.name not in stopped]
        os_waits |= {n: "held by a gate (see RolloutHeld)" for n in stopped if n in on_target}
    ordered, last = drain_order(candidates, drain_blocked or {}, released)
    os_ordered = [n.name for n in ordered if n.name in on_target]
    ordered = [n for n in ordered if n.name not in on_target]
    last = tuple(n for n in last if n not in on_target)
    free = upstream_order(stranded)
    spare = max(capacity, 0) - len(ordered[: max(capacity, 0)])
    boots, os_waits = choose(demand, os_ordered, spare, os_waits)
    if capacity <= 0 and not free:
        return Rollout(waiting=waiting, held=tuple(held), blocked=NO_CAPACITY, last=last,
                       gated=tuple(stopped), reboot_waits=os_waits)  # fmt: skip
    chosen = free + ordered[: max(capacity, 0)]
    chosen_names = {n.name for n in chosen}
    blocked = ""
    if capacity <= 0 and ordered:
        blocked = NO_CAPACITY
    elif not chosen and held:
        blocked = WINDOW
    elif not chosen and stopped:
        blocked = HELD
    elif not chosen and outside_wave:
        blocked = CANARY_WAVE
    return Rollout(
        targets=tuple(n.name for n in chosen),
        waiting=tuple(w for w in waiting if w not in chosen_names),
        held=tuple(held),
        capacity=max(capacity, 0),
        blocked=blocked,
        last=tuple(n for n in last if n not in chosen_names),
        gated=tuple(stopped),
        reboots=boots,
        reboot_waits=os_waits,
    )


def stranded_on_old_target(node: NodeView) -> bool:
    """Failed its last target and out of service (cordoned or NotReady): already counted
    unavailable, so giving it a new target takes nothing more out of the pool."""
    return node.failing and not node.schedulable_and_ready


def _held(node: NodeView, costs: Mapping[str, Cost | None] | None, anytime: bool) -> bool:
    return needs_window((costs or {}).get(node.name), anytime)


def drain_order(
    candidates: Sequence[NodeView], drain_blocked: Mapping[str, str], released: Collection[str]
) -> tuple[list[NodeView], tuple[str, ...]]:
    """The candidates in the order they may go, and the names put last. Released nodes
    are left out while any other candidate remains."""
    ordered = upstream_order(candidates)
    fresh = [n for n in ordered if n.name not in released]
    pool = fresh or ordered
    left_out = tuple(n.name for n in ordered if n.name in released) if fresh else ()
    if not drain_blocked:
        return pool, left_out
    free = [n for n in pool if n.name not in drain_blocked]
    held = [n for n in pool if n.name in drain_blocked]
    return free + held, tuple(n.name for n in held) + left_out


def condition(conditions: Sequence[Mapping[str, Any]], kind: str) -> Mapping[str, Any] | None:
    return next((c for c in conditions if c.get("type") == kind), None)


def set_condition(
    conditions: list[Obj], kind: str, status: bool, reason: str, message: str, now: str
) -> None:
    """Upstream ``SetMachineConfigPoolCondition``: no change when nothing differs; the
    transition time moves only when the status does; a changed condition goes last. The
    message is capped (:func:`mcd.model.pool.hygiene.cap`)."""
    value = "True" if status else "False"
    message = cap(message)
    old = condition(conditions, kind)
    if old and (old.get("status"), old.get("reason", ""), old.get("message", "")) == (
        value,
        reason,
        message,
    ):
        return
    since = old.get("lastTransitionTime") if old and old.get("status") == value else now
    conditions[:] = [c for c in conditions if c.get("type") != kind]
    new: Obj = {"type": kind, "status": value, "lastTransitionTime": since}
    if reason:
        new["reason"] = reason
    if message:
        new["message"] = message
    conditions.append(new)


def calculate_status(
    pool: Mapping[str, Any],
    nodes: Sequence[NodeView],
    now: str,
    *,
    rollout: Rollout | None = None,
    window: WindowState | None = None,
) -> Obj:
    """The pool's ``status`` (upstream ``calculateStatus``), from its nodes.

    ``now`` is the RFC 3339 time for changed conditions; ``rollout`` and ``window`` add
    what a maintenance window holds back to the ``Updating`` message.
    """
    spec = pool.get("spec") or {}
    old: Mapping[str, Any] = pool.get("status") or {}
    target = target_of(pool)
    total = len(nodes)
    updated = [n for n in nodes if n.updated(target)]
    ready = [n for n in updated if n.schedulable_and_ready]
    unavailable = [n for n in nodes if n.unavailable]
    degraded = [n for n in nodes if n.degraded]
    status: Obj = {
        "observedGeneration": (pool.get("metadata") or {}).get("generation", 0),
        "machineCount": total,
        "updatedMachineCount": len(updated),
        "readyMachineCount": len(ready),
        "unavailableMachineCount": len(unavailable),
        "degradedMachineCount": len(degraded),
        "configuration": copy.deepcopy(old.get("configuration") or {}),
        "conditions": copy.deepcopy(list(old.get("conditions") or [])),
    }
    conditions: list[Obj] = status["conditions"]
    line = f"MachineConfig {target}"
    all_updated = bool(target) and len(updated) == total == len(ready) and not unavailable
    if all_updated:
        set_condition(conditions, UPDATED, True, "", f"All nodes are updated with {line}", now)
        set_condition(conditions, UPDATING, False, "", "", now)
        status["configuration"] = copy.deepcopy(spec.get("configuration") or {})
    else:
        set_condition(conditions, UPDATED, False, "", "", now)
        if spec.get("paused"):
            message = f"Pool is paused; will not update to {line}"
            set_condition(conditions, UPDATING, False, "", message, now)
        else:
            message = f"All nodes are updating to {line}"
            if rollout is not None and rollout.blocked == INVALID:
                message += f"; stopped: {rollout.error}"
            elif rollout is not None and rollout.blocked == NODE_FAILING:
                message += f"; stopped: {', '.join(rollout.failing)} failed to apply it"
            elif rollout is not None and rollout.blocked == HALTED:
                message += "; halted by the rollout policy (see RolloutHalted)"
            elif rollout is not None and rollout.blocked == HELD:
                message += "; held by a gate of the rollout policy (see RolloutHeld)"
            elif rollout is not None and rollout.held and window is not None:
                message += (
                    f"; {len(rollout.held)} nodes wait for the maintenance window "
                    f"({window.describe()})"
                )
            if rebooting := [n.name for n in nodes if n.rebooting]:
                message += f"; OS reboot of {', '.join(rebooting[:10])} under way"
            if rollout is not None and rollout.last:
                message += (
                    f"; last: {', '.join(rollout.last[:10])}"
                    + (f" and {len(rollout.last) - 10} more" if len(rollout.last) > 10 else "")
                    + " (a PodDisruptionBudget would block the drain, or it timed out)"
                )
            set_condition(conditions, UPDATING, True, "", message, now)
    node_degraded = ""
    if degraded:
        reasons = [f"Node {n.name} is reporting: {goquote(n.reason)}" for n in degraded if n.reason]
        node_degraded = ", ".join(reasons)
        reason = f"{len(degraded)} nodes are reporting degraded status on sync"
        set_condition(conditions, NODE_DEGRADED, True, reason, node_degraded, now)
    else:
        set_condition(conditions, NODE_DEGRADED, False, "", "", now)
    render = condition(conditions, RENDER_DEGRADED)
    render_degraded = render is not None and render.get("status") == "True"
    if degraded or render_degraded:
        set_condition(conditions, DEGRADED, True, "", node_degraded, now)
    else:
        set_condition(conditions, DEGRADED, False, "", "", now)
    if window is not None:
        reason = "WindowOpen" if window.open else "WindowClosed"
        set_condition(conditions, MAINTENANCE_WINDOW, window.open, reason, window.describe(), now)
    else:
        conditions[:] = [c for c in conditions if c.get("type") != MAINTENANCE_WINDOW]
    return status


def render_condition(pool: Mapping[str, Any], error: str | None, now: str) -> list[Obj]:
    """The pool's conditions after a render: ``RenderDegraded`` with upstream's message."""
    conditions = copy.deepcopy(list((pool.get("status") or {}).get("conditions") or []))
    name = (pool.get("metadata") or {}).get("name", "")
    if error is None:
        set_condition(conditions, RENDER_DEGRADED, False, "", "", now)
    else:
        message = f"Failed to render configuration for pool {name}: {error}"
        set_condition(conditions, RENDER_DEGRADED, True, "", message, now)
    return conditions
