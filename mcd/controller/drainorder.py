"""The pool side of drain-aware rollouts: each node's drain rules from its pool
(:class:`mcd.controller.drain.DrainPolicy`), and the release of a node whose drain ran past
its pool's own ``drain-timeout``: its ``desiredConfig`` goes back to its current config (the
agent gives the drain up and uncordons), the Node is marked naming the pods that held it
(``mcd-project.github.io/drain-released``), a Warning Event on the pool says the same, and
the rollout takes that node only once no other node waits."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from mcd.cluster.api import ApiError, Obj
from mcd.cluster.pools import PoolWriter
from mcd.controller.drain import DrainPolicy
from mcd.model.drain.budgets import DRAIN_RELEASED, released_for
from mcd.model.drain.cadence import go_duration
from mcd.model.drain.settings import drain_settings
from mcd.model.pool.hygiene import Membership, cap
from mcd.model.pool.pools import NodeView, max_unavailable, name_of, target_of

log = logging.getLogger(__name__)


def drain_policies(pools: list[Obj], membership: Membership) -> dict[str, DrainPolicy]:
    """Each pool member's drain rules (its primary pool's ``drain-timeout`` and
    ``maxUnavailable``)."""
    out: dict[str, DrainPolicy] = {}
    for pool in pools:
        name = name_of(pool)
        members = membership.nodes_of(name)
        settings = drain_settings((pool.get("metadata") or {}).get("annotations") or {})
        try:
            limit = max_unavailable((pool.get("spec") or {}).get("maxUnavailable"), len(members))
        except ValueError:
            limit = 1
        policy = DrainPolicy(name, settings.timeout, limit, settings.set and not settings.error)
        out.update({name_of(n): policy for n in members})
    return out


def release(
    writer: PoolWriter,
    pool: Obj,
    nodes: list[Mapping[str, Any]],
    released: Mapping[str, str],
    timeout: float,
) -> list[Obj]:
    """Give back the slots of the pool's nodes whose drain timed out (``released``: node ->
    what held it); the Nodes written."""
    target = target_of(pool)
    written = []
    for node in nodes:
        view = NodeView.of(node)
        why = released.get(view.name)
        if not why or view.desired != target or not view.current or view.current == target:
            continue
        if released_for(node) == target:
            continue
        message = cap(
            f"node {view.name}: drain exceeded the pool's drain timeout "
            f"{go_duration(timeout)}; its slot is released and it goes last: {why}",
            1024,
        )
        try:
            written.append(writer.release(view.name, view.current, f"{target}: {message}"))
        except ApiError as e:
            log.warning("Pool %s: could not release node %s: %s", name_of(pool), view.name, e)
            continue
        log.warning("Pool %s: %s", name_of(pool), message)
        writer.event(pool, "DrainReleased", message, warning=True)
    return written


__all__ = ["DRAIN_RELEASED", "drain_policies", "release"]
