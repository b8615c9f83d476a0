"""A pool's drain conditions: ``DrainTimeout`` while the pool sets a drain timeout, and
``DrainBlocked`` naming each member's blocking pods and budgets (:mod:`mcd.model.drain.report`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from mcd.cluster.api import Obj
from mcd.cluster.pools import PoolWriter
from mcd.model.drain.report import DRAIN_BLOCKED, DRAIN_TIMEOUT, blocked_condition
from mcd.model.drain.settings import drain_settings
from mcd.model.pool.pools import NodeView
from mcd.model.pool.rollout import condition, set_condition


def conditions(
    writer: PoolWriter,
    drains_blocked: Mapping[str, str],
    pool: Obj,
    views: Sequence[NodeView],
    found: list[Obj],
    stamp: str,
) -> None:
    """Into the pool's conditions ``found``: ``DrainTimeout`` while the pool sets one (False,
    naming the annotation, when it cannot be used); ``DrainBlocked`` naming each member's
    blocking pods and budgets (of ``drains_blocked``: what holds each node's drain now), once
    a drain of the pool was blocked (False again when none is). A newly blocked drain is also
    a Warning Event on the pool."""
    annotations = (pool.get("metadata") or {}).get("annotations") or {}
    settings = drain_settings(annotations)
    if settings.set:
        reason = "InvalidDrainTimeout" if settings.error else "DrainTimeoutSet"
        set_condition(found, DRAIN_TIMEOUT, not settings.error, reason, settings.describe(), stamp)
    else:
        found[:] = [c for c in found if c.get("type") != DRAIN_TIMEOUT]
    members = {v.name for v in views}
    blocked = {n: why for n, why in drains_blocked.items() if n in members}
    before = condition(found, DRAIN_BLOCKED)
    if not blocked and before is None:
        return
    status, reason, message = blocked_condition(blocked)
    set_condition(found, DRAIN_BLOCKED, status, reason, message, stamp)
    if status and (before is None or before.get("message") != message):
        writer.event(pool, DRAIN_BLOCKED, message, warning=True)
