"""A pool's rollout policy in the controller's pass (:mod:`mcd.model.pool.canary`): read the
annotation, measure the nodes given the target (health gate verdicts from the Node
annotations, pod restarts from the API server), decide, and say so on the pool (conditions
``RolloutPolicy``, ``Canary``, ``RolloutHalted``, the halt annotation and a Warning Event
naming the nodes and why).

The restarts each node had when it was given the target are kept in memory: after a
controller restart the first count seen is the baseline (never a halt for restarts that
happened before)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping, MutableMapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from mcd.cluster.api import ApiError
from mcd.cluster.pools import PoolWriter
from mcd.model.node.health import (
    RETRY_ANNOTATION,
    STATE_ANNOTATION,
    describe_state,
    retry_pending,
    retry_request,
)
from mcd.model.pool.canary import (
    CANARY,
    HALT_ANNOTATION,
    HALTED,
    POLICY_ANNOTATION,
    ROLLOUT_POLICY,
    WAVE,
    Gate,
    Policy,
    PolicyError,
    crash_verdict,
    decide,
    parse_policy,
    unhealthy_nodes,
)
from mcd.model.pool.pools import NodeView, labels_of, name_of, target_of
from mcd.model.pool.rollout import condition, set_condition

log = logging.getLogger(__name__)

Obj = dict[str, Any]
Restarts = Callable[[Collection[str]], Mapping[str, tuple[int, tuple[str, ...]]]]


def _annotations(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("annotations") or {}


def _parse_time(value: object) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


@dataclass
class PolicyStep:
    writer: PoolWriter
    restarts: Restarts = field(default=lambda _n: {})
    observe_pool: Callable[[Obj], None] = field(default=lambda _o: None)
    observe_node: Callable[[Obj], None] = field(default=lambda _o: None)
    _baselines: dict[tuple[str, str], int] = field(default_factory=dict)
    _moved: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Nodes given the target while Degraded by an earlier one (a rollback reaching the node
    that failed): node -> (target, the reason then). Until the agent says anything else,
    that reason is the old config's, not a failure of the target."""

    def policy(self, pool: Mapping[str, Any]) -> tuple[Policy | None, str]:
        text = _annotations(pool).get(POLICY_ANNOTATION)
        if text is None:
            return None, ""
        try:
            return parse_policy(str(text)), ""
        except PolicyError as e:
            return None, str(e)

    def gate(
        self,
        pool: Mapping[str, Any],
        views: list[NodeView],
        nodes: MutableMapping[str, Mapping[str, Any]],
        now: datetime,
    ) -> tuple[Gate | None, str]:
        """The policy's verdict (None without a usable policy) and the policy error ('').
        ``nodes`` gets the Nodes written (a retry request when the halt was lifted)."""
        policy, error = self.policy(pool)
        if policy is None:
            return None, error
        target = target_of(pool)
        given = [v.name for v in views if v.desired == target and target]
        gate_failed: dict[str, str] = {}
        for name in given:
            state = describe_state(str(_annotations(nodes.get(name) or {}).get(STATE_ANNOTATION)))
            if state and state.get("result") == "failed" and state.get("config") == target:
                gate_failed[name] = state.get("check", "")
        retried: tuple[str, ...] = ()
        if _resumed(pool, target):  # the halt annotation removed: the failed nodes try again
            failed = [v.name for v in views if v.name in gate_failed or
                      (v.desired == target and v.degraded)]  # fmt: skip
            retried = self._request_retries(name_of(pool), target, failed, nodes, now)
        retrying = {n for n in given if retry_pending(_annotations(nodes.get(n) or {}), target)}
        retrying |= self._still_moving(views, target)
        crashing: dict[str, str] = {}
        rolling = any(v.desired != target for v in views)  # nothing left to protect: no lists
        measured = self.restarts(given) if given and rolling else {}
        for name, (count, looping) in measured.items():
            baseline = self._baselines.setdefault((name, target), count)
            verdict = crash_verdict(baseline, count, looping, policy.crash_restarts)
            if verdict:
                crashing[name] = verdict
        unhealthy = unhealthy_nodes(views, target, gate_failed, crashing, retrying)
        conditions = (pool.get("status") or {}).get("conditions") or []
        soaking = condition(conditions, CANARY)
        soak_since = None
        if soaking and soaking.get("status") == "True":
            soak_since = _parse_time(soaking.get("lastTransitionTime"))
        labels = {n: labels_of(obj) for n, obj in nodes.items()}
        gate = decide(
            policy, views, target, unhealthy, labels=labels,
            halted_for=str(_annotations(pool).get(HALT_ANNOTATION) or ""),
            soak_since=soak_since, now=now,
            completed=_completed(pool),
        )  # fmt: skip
        return (replace(gate, retried=retried) if retried else gate), ""

    def _request_retries(
        self, pool: str, target: str, names: Collection[str],
        nodes: MutableMapping[str, Mapping[str, Any]], now: datetime,
    ) -> tuple[str, ...]:  # fmt: skip
        """Ask each node's agent to run ``target``'s health gate again; the nodes asked."""
        request = retry_request(target, now.strftime("%Y-%m-%dT%H:%M:%SZ"))
        asked = []
        for name in sorted(names):
            if retry_pending(_annotations(nodes.get(name) or {}), target):
                asked.append(name)  # asked already, not answered yet
                continue
            try:
                written = self.writer.set_node_annotation(name, RETRY_ANNOTATION, request)
            except ApiError as e:  # not asked: its failure still counts (halted again)
                log.warning("Pool %s: could not ask node %s to re-run its health gate: %s",
                            pool, name, e)  # fmt: skip
                continue
            self.observe_node(written)
            nodes[name] = written
            asked.append(name)
        if asked:
            log.info("Pool %s: rollout of %s resumed; health gate re-run requested on %s",
                     pool, target, ", ".join(asked))  # fmt: skip
        return tuple(asked)

    def _still_moving(self, views: list[NodeView], target: str) -> set[str]:
        """The nodes moved off a failed config that still say only that failure."""
        out = set()
        for v in views:
            moved = self._moved.get(v.name)
            if moved is None:
                continue
            if moved == (target, v.reason) and v.desired == target and v.degraded:
                out.add(v.name)
            else:  # the agent has spoken since (or another target): it counts again
                del self._moved[v.name]
        return out

    def targeted(
        self, pool: Mapping[str, Any], nodes: Collection[str], views: Collection[NodeView] = ()
    ) -> None:
        """Record the restarts of the nodes given the target now (their baseline), and which
        of them are Degraded by an earlier config (:attr:`_moved`)."""
        if not nodes or self.policy(pool)[0] is None:
            return
        target = target_of(pool)
        for v in views:
            if v.name in nodes and v.degraded and v.desired != target:
                self._moved[v.name] = (target, v.reason)
        for name, (count, _looping) in self.restarts(nodes).items():
            self._baselines[(name, target)] = count
        if len(self._baselines) > 100_000:
            self._baselines.clear()

    def report(
        self, pool: Obj, gate: Gate | None, error: str, conditions: list[Obj], stamp: str
    ) -> None:
        """The conditions, the halt annotation and the Event for this pass."""
        name, target = name_of(pool), target_of(pool)
        policy, _ = self.policy(pool)
        if error:
            set_condition(conditions, ROLLOUT_POLICY, False, "InvalidPolicy",
                          f"{error}; the pool is halted until it is fixed", stamp)  # fmt: skip
        elif policy is not None:
            set_condition(conditions, ROLLOUT_POLICY, True, "PolicySet", policy.describe(), stamp)
        else:
            _drop(conditions, ROLLOUT_POLICY)
        if gate is None or not gate.phase:
            _drop(conditions, CANARY)
        else:
            set_condition(conditions, CANARY, gate.phase != WAVE, gate.phase,
                          gate.canary_message(target), stamp)  # fmt: skip
        halted_for = str(_annotations(pool).get(HALT_ANNOTATION) or "")
        if gate is not None and gate.halted:
            message = gate.halt_message(target, name)
            before = condition(conditions, HALTED)
            fresh = before is None or before.get("status") != "True"
            recorded = not gate.newly_halted or self._annotate(name, target)
            if gate.newly_halted or fresh:  # a halt that stands keeps its first message
                # only a recorded halt can be lifted (its annotation removed: a resume)
                reason = "UnhealthyNodes" if recorded else "HaltNotRecorded"
                set_condition(conditions, HALTED, True, reason, message, stamp)
                self.writer.event(pool, HALTED, message, warning=True)
            return
        if error:
            set_condition(conditions, HALTED, True, "InvalidPolicy", error, stamp)
            return
        if halted_for and (halted_for != target or gate is None):  # a new rollout, or no policy
            self._annotate(name, None)
        before = condition(conditions, HALTED)
        if before is not None and (before.get("status") == "True" or gate_retried(gate)):
            message = gate.resume_message(target) if gate is not None else ""
            set_condition(conditions, HALTED, False, "Resumed", message, stamp)
            if message:
                self.writer.event(pool, "RolloutResumed", message[:1].upper() + message[1:])

    def _annotate(self, pool: str, value: str | None) -> bool:
        try:
            written = self.writer.set_pool_annotation(pool, HALT_ANNOTATION, value)
        except ApiError as e:  # the next pass tries again
            log.warning("Pool %s: could not write %s: %s", pool, HALT_ANNOTATION, e)
            return False
        self.observe_pool(written)
        return True


def _completed(pool: Mapping[str, Any]) -> str:
    """The config every node of the pool was last Done on (``status.configuration``)."""
    return str(((pool.get("status") or {}).get("configuration") or {}).get("name") or "")


def gate_retried(gate: Gate | None) -> bool:
    return gate is not None and bool(gate.retried)


def _resumed(pool: Mapping[str, Any], target: str) -> bool:
    """The pool was halted on ``target`` and its halt annotation is gone: someone resumed it."""
    halted = condition((pool.get("status") or {}).get("conditions") or [], HALTED)
    return (
        bool(target)
        and halted is not None
        and halted.get("status") == "True"
        and halted.get("reason") == "UnhealthyNodes"
        and not _annotations(pool).get(HALT_ANNOTATION)
        and str(halted.get("message") or "").startswith(f"Rollout of {target} halted")
    )


def _drop(conditions: list[Obj], kind: str) -> None:
    conditions[:] = [c for c in conditions if c.get("type") != kind]
