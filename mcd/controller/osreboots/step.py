"""OS reboots in the controller's pass (:mod:`mcd.model.reboots`).

:func:`demand` turns a pool's rollout policy (``"osReboots": true``, ``osRebootInterval``)
and its nodes' annotations into what :func:`mcd.model.pool.rollout.plan_rollout` weighs with
the updates; :func:`report` writes ``mcd-project.github.io/reboot-requested`` on the nodes it
chose (an ``OSRebootRequested`` Event on the pool), and the pool's condition ``OSReboots``
names each node that waits and why (``mcd plan --pool`` and ``mcd status --cluster`` say the
same from the Nodes)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from datetime import datetime, timedelta
from typing import Any

import yaml

from mcd.cluster.api import ApiError, Obj
from mcd.cluster.pools import PoolWriter
from mcd.model.pool.canary import POLICY_ANNOTATION, PolicyError, canary_nodes, parse_policy
from mcd.model.pool.pools import NodeView, labels_of, name_of, target_of
from mcd.model.pool.rollout import Rollout, set_condition
from mcd.model.reboots.policy import RebootPolicy, RebootPolicyError, reboot_policy
from mcd.model.reboots.requests import REQUESTED_ANNOTATION, NodeReboot
from mcd.model.reboots.schedule import RebootDemand

log = logging.getLogger(__name__)

OS_REBOOTS = "OSReboots"
"""The pool condition: OS reboots scheduled (True), the policy's keys invalid (False)."""
REQUESTED_EVENT = "OSRebootRequested"
SHOWN = 10


def _annotations(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return (obj.get("metadata") or {}).get("annotations") or {}


def pool_policy(pool: Mapping[str, Any]) -> tuple[RebootPolicy, str]:
    """The pool's OS reboot settings, and why they cannot be used ('')."""
    text = _annotations(pool).get(POLICY_ANNOTATION)
    if text is None:
        return RebootPolicy(), ""
    try:
        parse_policy(str(text))  # bounded, no aliases, no unknown key (the canary's checks)
        return reboot_policy(yaml.safe_load(str(text))), ""
    except PolicyError:
        return RebootPolicy(), ""  # the policy step says so (RolloutPolicy, halted)
    except RebootPolicyError as e:
        return RebootPolicy(), f"annotation {POLICY_ANNOTATION}: {e.field_name}: {e.message}"


def demand(
    pool: Mapping[str, Any], views: Sequence[NodeView],
    nodes: Mapping[str, Mapping[str, Any]], now: datetime,
) -> RebootDemand | None:  # fmt: skip
    """The pool's OS reboots for the rollout (None: not scheduled for this pool)."""
    policy, error = pool_policy(pool)
    if error or not policy.enabled:
        return None
    canary: tuple[str, ...] = ()
    soak = timedelta(0)
    try:
        whole = parse_policy(str(_annotations(pool).get(POLICY_ANNOTATION)))
    except PolicyError:
        return None
    if whole.has_canary:
        labels = {n: labels_of(obj) for n, obj in nodes.items()}
        canary = canary_nodes(whole, views, target_of(pool), labels)
        soak = whole.soak
    states = {v.name: NodeReboot.of(_annotations(nodes.get(v.name) or {})) for v in views}
    return RebootDemand(policy, states, now, canary, soak)


def report(
    writer: PoolWriter, pool: Obj, rollout: Rollout, conditions: list[Obj], stamp: str,
    observe: Callable[[Obj], None], latest: MutableMapping[str, Mapping[str, Any]],
) -> None:  # fmt: skip
    """Ask the nodes the rollout chose for their OS reboot; the pool's ``OSReboots``."""
    name = name_of(pool)
    policy, error = pool_policy(pool)
    if error:
        set_condition(conditions, OS_REBOOTS, False, "InvalidPolicy", error, stamp)
        return
    if not policy.enabled:
        conditions[:] = [c for c in conditions if c.get("type") != OS_REBOOTS]
        return
    asked = []
    for node in rollout.reboots:
        try:
            written = writer.set_node_annotation(node, REQUESTED_ANNOTATION, stamp)
        except ApiError as e:  # the next pass decides again
            log.warning("Pool %s: could not ask node %s for its OS reboot: %s", name, node, e)
            continue
        observe(written)
        latest[node] = written
        asked.append(node)
    for node in asked:
        required = NodeReboot.of(_annotations(latest[node])).required
        source = required.source if required is not None else "the OS"
        log.info("Pool %s: node %s gets a slot for the OS reboot %s asks for", name, node, source)
        writer.event(pool, REQUESTED_EVENT, f"Node {node}: OS reboot requested (asked by {source})")
    pending = sorted(n for n, obj in latest.items()
                     if NodeReboot.of(_annotations(obj)).pending)  # fmt: skip
    set_condition(conditions, OS_REBOOTS, True, "Scheduled",
                  describe(policy, pending, rollout.reboot_waits), stamp)  # fmt: skip


def describe(policy: RebootPolicy, rebooting: Sequence[str], waits: Mapping[str, str]) -> str:
    """The ``OSReboots`` message: the policy, who reboots, who waits and why."""
    parts = [policy.describe()]
    if rebooting:
        parts.append(f"rebooting: {', '.join(rebooting[:SHOWN])}")
    shown = sorted(waits.items())[:SHOWN]
    parts += [f"{node} waits: {why}" for node, why in shown]
    if len(waits) > SHOWN:
        parts.append(f"and {len(waits) - SHOWN} more waiting")
    if not rebooting and not waits:
        parts.append("no node's OS asks for a reboot")
    return "; ".join(parts)
