"""A pool's hygiene conditions (:mod:`mcd.model.pool.hygiene` decides): ``InvalidNodeSelector``
on a pool whose ``nodeSelector`` no label selector can use (its status is written alone: no
node is its member, its counts stay), and ``NodeInTwoPools`` on every custom pool that
selects a node another custom pool selects too; upstream's ``SelectingAll`` Event on a pool
whose empty ``nodeSelector`` selects every node (it rolls nothing out)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mcd.cluster.api import Obj
from mcd.cluster.pools import PoolWriter
from mcd.model.pool.hygiene import (
    INVALID_NODE_SELECTOR,
    NODE_CONFLICT,
    Membership,
    conflict_message,
)
from mcd.model.pool.pools import NodeView, name_of, selects_all
from mcd.model.pool.rollout import condition, set_condition


def selecting_all(writer: PoolWriter, pool: Obj) -> bool:
    """Does the pool select every node? Then upstream's Warning Event, and no rollout."""
    if not selects_all((pool.get("spec") or {}).get("nodeSelector")):
        return False
    message = "This machineconfigpool is selecting all nodes. A non-empty selector is required."
    writer.event(pool, "SelectingAll", message, warning=True)
    return True


def invalid_selector(
    writer: PoolWriter, pool: Obj, old: Obj, problem: str, stamp: str
) -> tuple[Obj, Obj | None]:
    """The status of a pool whose ``nodeSelector`` cannot be used, and the pool the server
    answered when it was written (None when nothing changed); a Warning Event when it turns
    True."""
    status: Obj = {**old, "conditions": list((pool.get("status") or {}).get("conditions") or [])}
    status["observedGeneration"] = (pool.get("metadata") or {}).get("generation", 0)
    message = f"nodeSelector: {problem}; no node is taken into this pool until it is fixed"
    before = condition(status["conditions"], INVALID_NODE_SELECTOR)
    set_condition(status["conditions"], INVALID_NODE_SELECTOR, True, "InvalidLabelSelector",
                  message, stamp)  # fmt: skip
    written = None
    if any(old.get(k) != v for k, v in status.items()):
        written = writer.set_status(name_of(pool), status)
    if before is None or before.get("status") != "True":
        writer.event(pool, INVALID_NODE_SELECTOR, message, warning=True)
    return status, written


def conditions(
    name: str,
    membership: Membership,
    nodes: Sequence[Mapping[str, Any]],
    out: list[Obj],
    stamp: str,
) -> None:
    """``InvalidNodeSelector`` False once fixed; ``NodeInTwoPools`` naming each node two
    custom pools select (True on both pools; False once none is)."""
    if condition(out, INVALID_NODE_SELECTOR) is not None:
        set_condition(out, INVALID_NODE_SELECTOR, False, "", "", stamp)
    conflicts = membership.conflicts_of(name)
    if conflicts:
        current = {name_of(n): NodeView.of(n).current for n in nodes if name_of(n) in conflicts}
        message = conflict_message(name, conflicts, current)
        set_condition(out, NODE_CONFLICT, True, "NodeInCustomPools", message, stamp)
    elif condition(out, NODE_CONFLICT) is not None:
        set_condition(out, NODE_CONFLICT, False, "", "", stamp)
