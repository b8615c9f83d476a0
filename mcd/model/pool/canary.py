"""Rollout policy per pool (beyond upstream): a canary wave and an automatic halt. Pure: the
caller passes the clock, the nodes and what it measured on them.

A pool opts in with the annotation ``mcd-project.github.io/rollout-policy``, a JSON (or YAML)
object beside the maintenance window::

    {"canary": 1, "soak": "30m", "maxUnhealthy": 0, "crashLoopRestarts": 3}

* ``canary``: the first wave, a number of nodes (``1``), a percentage of the pool (``"10%"``,
  rounded up, at least one node) or a label selector (``{"matchLabels": {...}}``); every
  canary node must be Done on the target and stay healthy for ``soak`` before any other
  node gets it;
* ``soak``: ``90m``, ``4h``, ``45s`` (default ``10m``; at most 7 days);
* ``maxUnhealthy``: how many nodes already given the target may be unhealthy (a number, or a
  percentage of the pool rounded down; default 0) before the pool halts itself;
* ``crashLoopRestarts``: the container restarts on a node since it was given the target past
  which its crash-looping pods make it unhealthy (default 3).

A node given the target is unhealthy when it is Degraded or Unreconcilable, NotReady, its
health gate failed on the target, or pods on it crash-loop more than before the update. Past
``maxUnhealthy`` the pool halts: the controller records the halted target in the annotation
``mcd-project.github.io/rollout-halted`` (no further node gets the target; updates under way
finish). Removing that annotation resumes the rollout; a new target (changed MachineConfigs
or a rollback) is a new rollout and is not halted. A rollout back to the config the whole pool
was last Done on (``status.configuration``, as after ``mcd rollback`` of a halted rollout) has
no canary wave: that config is proven on every node.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from mcd.model.pool.pools import NodeView, SelectorError, selector_matches, upstream_order
from mcd.model.pool.windows import WindowError, annotation_object, parse_duration
from mcd.model.reboots.policy import KEYS as REBOOT_KEYS
from mcd.model.text import selector_string

POLICY_ANNOTATION = "mcd-project.github.io/rollout-policy"
HALT_ANNOTATION = "mcd-project.github.io/rollout-halted"
_KEYS = (
    frozenset({"canary", "soak", "maxUnhealthy", "crashLoopRestarts", "blockingPods", "alerts"})
    | REBOOT_KEYS
)
_PERCENT = re.compile(r"^(\d{1,3})%$")

# the pool conditions this module decides
ROLLOUT_POLICY = "RolloutPolicy"
CANARY = "Canary"
HALTED = "RolloutHalted"


class PolicyError(ValueError):
    """A rollout policy annotation that cannot be used; the text names the field."""

    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(f"annotation {POLICY_ANNOTATION}: {field_name}: {message}")


@dataclass(frozen=True)
class Policy:
    canary_count: int = 0
    canary_percent: int = 0
    canary_selector: Mapping[str, Any] | None = None
    soak: timedelta = timedelta(minutes=10)
    max_unhealthy: int = 0
    max_unhealthy_percent: int | None = None
    crash_restarts: int = 3

    @property
    def has_canary(self) -> bool:
        return bool(self.canary_count or self.canary_percent or self.canary_selector)

    def unhealthy_limit(self, total: int) -> int:
        if self.max_unhealthy_percent is not None:
            return self.max_unhealthy_percent * total // 100
        return self.max_unhealthy

    def describe(self) -> str:
        parts = []
        if self.canary_selector is not None:
            parts.append(f"canary: nodes matching {selector_string(self.canary_selector)}")
        elif self.canary_percent:
            parts.append(f"canary: {self.canary_percent}% of the nodes")
        elif self.canary_count:
            noun = "node" if self.canary_count == 1 else "nodes"
            parts.append(f"canary: {self.canary_count} {noun}")
        if self.has_canary:
            parts.append(f"soak {_span(self.soak)}")
        limit = (
            f"{self.max_unhealthy_percent}%"
            if self.max_unhealthy_percent is not None
            else str(self.max_unhealthy)
        )
        parts.append(f"halt past {limit} unhealthy updated nodes")
        return ", ".join(parts)


def _span(delta: timedelta) -> str:
    seconds = int(delta.total_seconds())
    if seconds % 3600 == 0:
        return f"{seconds // 3600}h"
    if seconds % 60 == 0:
        return f"{seconds // 60}m"
    return f"{seconds}s"


def parse_policy(text: str) -> Policy:
    doc = annotation_object(text, _KEYS, PolicyError)
    policy = Policy()
    canary = doc.get("canary")
    if canary is not None:
        policy = _canary(policy, canary)
    if "soak" in doc:
        try:
            soak = parse_duration(doc["soak"])
        except WindowError as e:
            raise PolicyError("soak", str(e).split("duration: ", 1)[-1]) from None
        policy = _replace(policy, soak=soak)
    if "maxUnhealthy" in doc:
        value = doc["maxUnhealthy"]
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 100_000:
            policy = _replace(policy, max_unhealthy=value)
        elif isinstance(value, str) and (m := _PERCENT.match(value)) and int(m.group(1)) <= 100:
            policy = _replace(policy, max_unhealthy_percent=int(m.group(1)))
        else:
            expected = "expected a number or a percentage such as 10%"
            raise PolicyError("maxUnhealthy", f"{expected}, got {_short(value)}")
    if "crashLoopRestarts" in doc:
        value = doc["crashLoopRestarts"]
        if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 10_000:
            raise PolicyError(
                "crashLoopRestarts", f"expected a number from 1 to 10000, got {_short(value)}"
            )
        policy = _replace(policy, crash_restarts=value)
    return policy


def _canary(policy: Policy, value: object) -> Policy:
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 100_000:
        return _replace(policy, canary_count=value)
    if isinstance(value, str) and (m := _PERCENT.match(value)) and 1 <= int(m.group(1)) <= 100:
        return _replace(policy, canary_percent=int(m.group(1)))
    if isinstance(value, dict) and (value.get("matchLabels") or value.get("matchExpressions")):
        if set(value) - {"matchLabels", "matchExpressions"}:
            raise PolicyError("canary", "a label selector has only matchLabels, matchExpressions")
        try:
            selector_matches(value, {})
        except (SelectorError, AttributeError, TypeError) as e:
            raise PolicyError("canary", f"invalid label selector: {str(e)[:120]}") from None
        return _replace(policy, canary_selector=value)
    raise PolicyError(
        "canary",
        "expected a number of nodes, a percentage such as 10%, or a label selector "
        f"({{matchLabels: ...}}), got {_short(value)}",
    )


def _replace(policy: Policy, **changes: Any) -> Policy:
    return replace(policy, **changes)


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 64 else text[:60] + "...'"


# -- what is wrong with a node ------------------------------------------------------------


def crash_verdict(baseline: int | None, restarts: int, looping: Sequence[str], limit: int) -> str:
    """Why a node's pods make it unhealthy ('' when they do not): some pod is in
    CrashLoopBackOff and its containers restarted ``limit`` times or more since
    ``baseline`` (the restarts when the node was given the target; None: unknown, then no
    verdict)."""
    if baseline is None or not looping:
        return ""
    more = restarts - baseline
    if more < limit:
        return ""
    shown = ", ".join(looping[:3]) + (f" and {len(looping) - 3} more" if len(looping) > 3 else "")
    return f"pods crash-looping ({shown}; {more} restarts since the update)"


def unhealthy_nodes(
    views: Sequence[NodeView],
    target: str,
    gate_failed: Mapping[str, str] | None = None,
    crashing: Mapping[str, str] | None = None,
    retrying: Collection[str] = (),
) -> dict[str, str]:
    """The nodes given ``target`` that are unhealthy, each with why: Degraded or
    Unreconcilable, NotReady, the health gate failed on ``target`` (``gate_failed``: node ->
    the failed check) or pods crash-looping (``crashing``: node -> :func:`crash_verdict`).
    ``retrying``: nodes asked to run the gate again (a resumed rollout) that have not
    answered yet: their earlier failure (Degraded, the failed gate) does not count."""
    out: dict[str, str] = {}
    for v in views:
        if v.desired != target or not target:
            continue
        again = v.name in retrying
        if v.degraded and not again:
            out[v.name] = f"{v.state}: {v.reason}" if v.reason else v.state
        elif not v.ready:
            out[v.name] = v.not_ready_reason or "NotReady"
        elif again:
            continue
        elif (gate_failed or {}).get(v.name) is not None:
            check = (gate_failed or {})[v.name]
            out[v.name] = f"health gate failed ({check})" if check else "health gate failed"
        elif (crashing or {}).get(v.name):
            out[v.name] = (crashing or {})[v.name]
    return out


# -- the decision ---------------------------------------------------------------------------

WAVE, SOAKING, PASSED = "Waiting", "Soaking", "Passed"


@dataclass(frozen=True)
class Gate:
    """What the rollout policy allows now."""

    halted: bool = False
    newly_halted: bool = False
    unhealthy: Mapping[str, str] = field(default_factory=dict)
    only: frozenset[str] | None = None
    """When set, only these nodes may get the target now (the canary wave)."""
    canary: tuple[str, ...] = ()
    phase: str = ""
    """'' (no canary), WAVE, SOAKING or PASSED."""
    soak_until: datetime | None = None
    retried: tuple[str, ...] = ()
    """Nodes asked to run the health gate again in this pass (the halt was lifted)."""

    def resume_message(self, target: str) -> str:
        if not self.retried:
            return f"rollout of {target} resumed"
        return (f"rollout of {target} resumed; health gate re-run requested on "
                f"{', '.join(self.retried)} (their earlier failure no longer counts)")  # fmt: skip

    def halt_message(self, target: str, pool: str) -> str:
        named = "; ".join(f"{n}: {why}" for n, why in sorted(self.unhealthy.items()))
        what = named or "halted earlier"
        return (
            f"Rollout of {target} halted: {len(self.unhealthy)} unhealthy updated nodes "
            f"({what}). To resume once fixed: kubectl annotate machineconfigpool {pool} "
            f"{HALT_ANNOTATION}- (or roll back: mcd rollback --pool {pool})"
        )

    def canary_message(self, target: str) -> str:
        names = ", ".join(self.canary[:10]) + (
            f" and {len(self.canary) - 10} more" if len(self.canary) > 10 else ""
        )
        if self.phase == WAVE:
            return f"canary {names} updating to {target}; the other nodes wait"
        if self.phase == SOAKING and self.soak_until is not None:
            until = self.soak_until.isoformat(timespec="seconds")
            return f"canary {names} on {target}; soaking until {until}, then the rest"
        return f"canary {names} passed on {target}"


def canary_nodes(policy: Policy, views: Sequence[NodeView], target: str,
                 labels: Mapping[str, Mapping[str, str]]) -> tuple[str, ...]:  # fmt: skip
    """The canary wave: the selected nodes, or the first N (nodes already Done on the
    target first, then those given it, then upstream order: the wave stays the same while
    it rolls)."""
    if policy.canary_selector is not None:
        selector = policy.canary_selector
        ordered = upstream_order(views)
        return tuple(v.name for v in ordered if selector_matches(selector, labels.get(v.name, {})))
    total = len(views)
    if policy.canary_percent:
        count = max(1, math.ceil(policy.canary_percent * total / 100))
    else:
        count = policy.canary_count
    ordered = upstream_order(views)
    ranked = sorted(
        ordered,
        key=lambda v: 0 if v.updated(target) else 1 if v.desired == target else 2,
    )  # sorted() is stable: upstream order within each rank
    return tuple(v.name for v in ranked[:count])


def decide(
    policy: Policy,
    views: Sequence[NodeView],
    target: str,
    unhealthy: Mapping[str, str],
    *,
    labels: Mapping[str, Mapping[str, str]],
    halted_for: str,
    soak_since: datetime | None,
    now: datetime,
    completed: str = "",
) -> Gate:
    """The policy's verdict for one pass. ``halted_for`` is the target a halt was recorded
    for (the pool's halt annotation, '' when none); ``soak_since`` when the canary was
    first seen Done and healthy (None: not yet); ``completed`` the config the whole pool
    was last Done on (``status.configuration``): a rollout back to it has no canary wave
    (every node ran it; a rollback must reach the node that failed at once)."""
    limit = policy.unhealthy_limit(len(views))
    already = bool(target) and halted_for == target
    if already or len(unhealthy) > limit:
        return Gate(halted=True, newly_halted=not already, unhealthy=dict(unhealthy))
    if not policy.has_canary or not target or target == completed:
        return Gate(unhealthy=dict(unhealthy))
    wave = canary_nodes(policy, views, target, labels)
    by_name = {v.name: v for v in views}
    ready = all(by_name[n].updated(target) and n not in unhealthy for n in wave)
    if not ready:
        return Gate(unhealthy=dict(unhealthy), only=frozenset(wave), canary=wave, phase=WAVE)
    since = soak_since or now
    until = since + policy.soak
    if now < until:
        return Gate(unhealthy=dict(unhealthy), only=frozenset(wave), canary=wave,
                    phase=SOAKING, soak_until=until)  # fmt: skip
    return Gate(unhealthy=dict(unhealthy), canary=wave, phase=PASSED, soak_until=until)


def pod_restarts(pods: Sequence[Mapping[str, Any]]) -> tuple[int, tuple[str, ...]]:
    """The container restarts of a node's pods, and the pods crash-looping now
    (``namespace/name``, a container waiting in ``CrashLoopBackOff``)."""
    total, looping = 0, []
    for pod in pods:
        statuses = list((pod.get("status") or {}).get("containerStatuses") or [])
        statuses += list((pod.get("status") or {}).get("initContainerStatuses") or [])
        crashing = False
        for cs in statuses:
            if not isinstance(cs, Mapping):
                continue
            count = cs.get("restartCount")
            total += count if isinstance(count, int) and count > 0 else 0
            waiting = (cs.get("state") or {}).get("waiting") or {}
            crashing = crashing or waiting.get("reason") == "CrashLoopBackOff"
        if crashing:
            meta = pod.get("metadata") or {}
            looping.append(f"{meta.get('namespace', '')}/{meta.get('name', '')}")
    return total, tuple(sorted(looping))
