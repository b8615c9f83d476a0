"""The gates at the one place the controller picks the nodes to disrupt (kured's
``rebootAsRequired`` asks its blockers there too): :meth:`HoldStep.plan` wraps the pool's
:func:`mcd.model.pool.rollout.plan_rollout`, so every node the rollout would take passes them.

* the alert gate is asked once a pass (:class:`mcd.controller.holds.prometheus.AlertQuery`);
  alerts that count, or no answer, hold every node whose update drains or reboots;
* the pods of each node the rollout picks are listed (one request a node; kured's
  ``KubernetesBlockingChecker``); a node with a blocking pod is passed over and the rollout
  is planned again, so the next node goes instead. A node found blocked is remembered until
  it is checked again (at most every ``pod_ttl`` seconds, when the rollout would take it) or
  no longer waits; at most :data:`MAX_CHECKS` nodes are listed a pass;
* :meth:`HoldStep.report` names the hold in the pool condition ``RolloutHeld`` (reasons
  ``AlertsFiring``, ``PrometheusUnreachable``, ``BlockingPods``, ``InvalidPolicy``) and in an
  Event each time it changes (``RolloutHoldReleased`` when it ends)."""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from mcd.cluster.api import ApiError
from mcd.cluster.pools import PoolWriter
from mcd.controller.holds.prometheus import AlertQuery
from mcd.model.holds.gates import (
    ALERTS_FIRING,
    BLOCKING_PODS,
    HELD,
    INVALID_GATES,
    PROMETHEUS_UNREACHABLE,
    GateError,
    Gates,
    alerts_message,
    blocking_pods,
    parse_gates,
    pods_message,
    unreachable_message,
)
from mcd.model.planning.plan import Cost, update_cost
from mcd.model.pool.canary import POLICY_ANNOTATION
from mcd.model.pool.pools import NodeView, name_of
from mcd.model.pool.rollout import Rollout, condition, set_condition

log = logging.getLogger(__name__)

Obj = dict[str, Any]
Plan = Callable[[str, Collection[str]], Rollout]
"""``plan(hold, gated)``: the pool's rollout with these gates."""
MAX_CHECKS = 25
"""Nodes whose pods are listed in one pass, per pool."""
RELEASED = "RolloutHoldReleased"


def pool_gates(pool: Mapping[str, Any]) -> tuple[Gates | None, str]:
    """The pool's gates (None: it sets none) and why they cannot be used ('')."""
    text = ((pool.get("metadata") or {}).get("annotations") or {}).get(POLICY_ANNOTATION)
    return (None, "") if text is None else _parsed(str(text))


@functools.lru_cache(maxsize=64)
def _parsed(text: str) -> tuple[Gates | None, str]:
    """:func:`parse_gates` once per annotation text (a pass reads it twice a pool)."""
    try:
        return parse_gates(text), ""
    except GateError as e:
        return None, str(e)


def costs_of(
    configs: Mapping[str, Obj], views: Sequence[NodeView], target: str
) -> dict[str, Cost | None]:
    """What each node waiting for ``target`` pays to move (one plan per current config)."""
    by_current: dict[str, Cost | None] = {}
    out = {}
    for v in views:
        if v.desired == target:
            continue
        if v.current not in by_current:
            by_current[v.current] = update_cost(configs, v.current, target)
        out[v.name] = by_current[v.current]
    return out


def disrupted(rollout: Rollout) -> tuple[str, ...]:
    """The nodes the rollout disrupts now: its targets, and its OS reboots where the rollout
    schedules them (issue 44 items 1-2, ``Rollout.reboots``): both pass the same gates."""
    return rollout.targets + tuple(getattr(rollout, "reboots", ()))


def _without(rollout: Rollout, names: set[str]) -> Rollout:
    """The rollout with ``names`` taken off what it disrupts now (they wait)."""
    changes: dict[str, Any] = {
        "targets": tuple(t for t in rollout.targets if t not in names),
        "waiting": rollout.waiting + tuple(t for t in rollout.targets if t in names),
    }
    reboots = getattr(rollout, "reboots", None)
    if reboots is not None:
        changes["reboots"] = tuple(t for t in reboots if t not in names)
    return replace(rollout, **changes)


@dataclass
class HoldStep:
    writer: PoolWriter
    alerts: AlertQuery = field(default_factory=AlertQuery)
    pod_ttl: float = 10.0
    clock: Callable[[], float] = time.monotonic
    _blocked: dict[str, dict[str, tuple[float, tuple[str, ...]]]] = field(default_factory=dict)
    """Pool -> node -> (when its pods were listed, the pods that block it)."""
    _hold: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Pool -> (reason, message) of the pool-wide hold this pass ('' when none)."""
    _told: dict[str, tuple[str, str]] = field(default_factory=dict)

    def applies(self, pool: Mapping[str, Any]) -> bool:
        """Does the pool set gates (or a gate that cannot be used)?"""
        gates, error = pool_gates(pool)
        return gates is not None or bool(error)

    def plan(self, pool: Mapping[str, Any], plan: Plan) -> Rollout:
        """The rollout with the pool's gates applied (see the module docstring)."""
        name = name_of(pool)
        gates, error = pool_gates(pool)
        if gates is None and not error:
            self._forget(name)
            return plan("", ())
        reason, hold = "", ""
        if error:
            reason, hold = INVALID_GATES, f"{error}; the pool is held until it is fixed"
        elif gates is not None and gates.alerts is not None:
            names, problem = self.alerts(gates.alerts)
            if problem:
                reason, hold = PROMETHEUS_UNREACHABLE, unreachable_message(gates.alerts, problem)
            elif names:
                reason, hold = ALERTS_FIRING, alerts_message(gates.alerts, names)
        self._hold[name] = (reason, hold)
        store = self._blocked.setdefault(name, {})
        now = self.clock()
        fresh = {n for n, (at, _p) in store.items() if now - at < self.pod_ttl}
        rollout = plan(hold, fresh)
        if hold or gates is None or not gates.blocking_pods:
            return rollout
        checked: set[str] = set()
        while True:
            due = [t for t in disrupted(rollout) if t not in checked]
            if not due or len(checked) >= MAX_CHECKS:
                break
            found = False
            for node in due[: MAX_CHECKS - len(checked)]:
                checked.add(node)
                pods = self._pods(node, gates.blocking_pods)
                if pods:
                    store[node] = (now, pods)
                    fresh.add(node)
                    found = True
                else:
                    store.pop(node, None)
                    fresh.discard(node)
            if not found:
                break
            rollout = plan(hold, fresh)
        unchecked = [t for t in disrupted(rollout) if t not in checked]
        if unchecked:  # the check budget ran out: they wait for a later pass
            rollout = _without(rollout, set(unchecked))
        waiting = set(rollout.waiting)
        for node in [n for n in store if n not in waiting]:
            del store[node]  # updated, or gone: no longer blocked
        return rollout

    def _pods(self, node: str, selectors: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
        try:
            listing = self.writer.kube.request(
                "GET", "/api/v1/pods", {"fieldSelector": f"spec.nodeName={node}"}
            )
        except ApiError as e:  # kured: a pod query error blocks
            log.warning("Could not list the pods on node %s: %s", node, e)
            return (f"(the pods could not be listed: {e.reason or e.status})",)
        return blocking_pods(listing.get("items") or [], selectors)

    def _forget(self, pool: str) -> None:
        self._blocked.pop(pool, None)
        self._hold.pop(pool, None)

    def report(self, pool: Obj, rollout: Rollout, conditions: list[Obj], stamp: str) -> None:
        """``RolloutHeld`` and its Events for this pass (dropped for a pool with no gates)."""
        name = name_of(pool)
        if name not in self._hold:
            conditions[:] = [c for c in conditions if c.get("type") != HELD]
            self._told.pop(name, None)
            return
        reason, message = self._hold[name]
        if not reason:
            waiting = set(rollout.waiting) - set(rollout.targets)
            pods = {n: p for n, (_at, p) in self._blocked.get(name, {}).items() if n in waiting}
            reason, message = (BLOCKING_PODS, pods_message(pods)) if pods else ("", "")
        if reason in (ALERTS_FIRING, PROMETHEUS_UNREACHABLE) and not rollout.gated:
            reason, message = "", ""  # nothing waits that the hold would stop
        before = condition(conditions, HELD)
        if reason:
            set_condition(conditions, HELD, True, reason, message, stamp)
        elif before is not None:
            set_condition(conditions, HELD, False, "", "", stamp)
        told = self._told.get(name, ("", ""))
        if (reason, message) == told:
            return
        self._told[name] = (reason, message)
        if reason:
            log.info("Pool %s: rollout held: %s", name, message)
            warning = reason in (PROMETHEUS_UNREACHABLE, INVALID_GATES)
            self.writer.event(pool, reason, message, warning=warning)
        elif told[0]:
            log.info("Pool %s: rollout no longer held (was %s)", name, told[0])
            self.writer.event(pool, RELEASED, f"Rollout no longer held (was: {told[0]})")
