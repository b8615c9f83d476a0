"""Careless pools, judged once per pass so that one never stops the others. Pure.

* a ``nodeSelector`` the API server accepted but no label selector can use (an unknown
  operator; ``In`` with no values) selects nothing and is a condition on that pool only
  (upstream's ``invalid label selector: ...``), where upstream's lister error emptied
  every pool;
* a node selected by two custom pools belongs to neither while that lasts: its
  ``desiredConfig`` is left where it is (so it stays on the config its previous pool gave
  it), both pools say so in a condition, and ``mcc_pool_alert{node}`` is 1 (upstream's
  ``MCCPoolAlert``, which it also raises when ``master`` wins over a custom pool);
* every message written to a pool is capped (:func:`cap`).

:func:`membership` computes every node's pool once, instead of once per pool.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mcd.model.pool.pools import MASTER, WORKER, name_of, selects_all

Obj = Mapping[str, Any]

MESSAGE_LIMIT = 2048
"""The most characters of one condition message or Event (the rest is cut, marked)."""

INVALID_NODE_SELECTOR = "InvalidNodeSelector"
NODE_CONFLICT = "NodeInTwoPools"
OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def cap(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """``text`` cut to ``limit`` characters, saying how much was cut."""
    if len(text) <= limit:
        return text
    kept = limit - 40  # room for the note below, whatever the count
    return text[:kept] + f"... ({len(text) - kept} more characters)"


def selector_problem(selector: object) -> str:
    """Why ``selector`` cannot select nodes, in apimachinery's words; '' when it can."""
    if selector is None:
        return ""
    if not isinstance(selector, Mapping):
        return "invalid label selector: expected an object"
    labels = selector.get("matchLabels") or {}
    if not isinstance(labels, Mapping):
        return "invalid label selector: matchLabels: expected an object"
    expressions = selector.get("matchExpressions") or []
    if not isinstance(expressions, list):
        return "invalid label selector: matchExpressions: expected a list"
    for expr in expressions:
        if not isinstance(expr, Mapping):
            return "invalid label selector: matchExpressions: expected objects"
        op = expr.get("operator", "")
        values = expr.get("values") or []
        if op not in OPERATORS:
            return cap(
                f"invalid label selector: {_quote(op)} is not a valid label selector operator"
            )
        if op in ("In", "NotIn") and not values:
            return (
                "invalid label selector: values: Invalid value: []: "
                "for 'in', 'notin' operators, values set can't be empty"
            )
        if op in ("Exists", "DoesNotExist") and values:
            return (
                "invalid label selector: values: Invalid value: "
                "for 'exists', 'doesnotexist' operators, values set must be empty"
            )
    return ""


def _quote(value: object) -> str:
    text = str(value)[:256]
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


@dataclass(frozen=True)
class Membership:
    """Every node's pool for one pass."""

    members: dict[str, list[Obj]] = field(default_factory=dict)
    """Pool name -> the nodes whose primary pool it is."""
    invalid: dict[str, str] = field(default_factory=dict)
    """Pool name -> why its nodeSelector selects nothing."""
    conflicts: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Node name -> the custom pools that all select it (it belongs to none)."""
    alerts: dict[str, int] = field(default_factory=dict)
    """Node name -> ``mcc_pool_alert`` (1: two custom pools, or master over a custom one)."""

    def nodes_of(self, pool: str) -> list[Obj]:
        return self.members.get(pool, [])

    def conflicts_of(self, pool: str) -> dict[str, tuple[str, ...]]:
        return {n: pools for n, pools in self.conflicts.items() if pool in pools}


def refreshed(previous: Membership, nodes: Sequence[Obj]) -> Membership:
    """``previous`` with each member replaced by its version in ``nodes``: what
    :func:`membership` gives when no pool and no node was added, removed or relabelled since
    (a node changed otherwise stays in its pool; a node not in ``nodes`` is left out)."""
    pool_of = {name_of(n): pool for pool, found in previous.members.items() for n in found}
    members: dict[str, list[Obj]] = {pool: [] for pool in previous.members}
    for node in nodes:
        pool = pool_of.get(name_of(node))
        if pool is not None:
            members[pool].append(node)
    return Membership(members, previous.invalid, previous.conflicts, previous.alerts)


def membership(pools: Sequence[Obj], nodes: Sequence[Obj]) -> Membership:
    """Upstream ``GetPoolsForNode`` for every node at once; pools with an unusable
    ``nodeSelector`` (and pools selecting every node) take part in nothing."""
    invalid: dict[str, str] = {}
    usable: list[tuple[str, list[tuple[str, str, list[str]]], dict[str, str]]] = []
    for pool in pools:
        selector = (pool.get("spec") or {}).get("nodeSelector")
        problem = selector_problem(selector)
        if problem:
            invalid[name_of(pool)] = problem
            continue
        if selector is None or selects_all(selector):
            continue
        exprs = [
            (str(e.get("key", "")), str(e.get("operator")), [str(v) for v in e.get("values") or []])
            for e in selector.get("matchExpressions") or []
        ]
        usable.append((name_of(pool), exprs, dict(selector.get("matchLabels") or {})))
    members: dict[str, list[Obj]] = {name_of(p): [] for p in pools}
    conflicts: dict[str, tuple[str, ...]] = {}
    alerts: dict[str, int] = {}
    for node in nodes:
        labels = (node.get("metadata") or {}).get("labels") or {}  # read, never copied
        matching = [name for name, exprs, want in usable if _matches(exprs, want, labels)]
        if not matching:
            continue
        custom = [p for p in matching if p not in (MASTER, WORKER)]
        node_name = name_of(node)
        if len(custom) > 1:
            conflicts[node_name] = tuple(sorted(custom))
            alerts[node_name] = 1
            continue
        if MASTER in matching:
            primary = MASTER
            alerts[node_name] = 1 if custom else 0
        elif custom:
            primary = custom[0]
            alerts[node_name] = 0
        else:
            primary = WORKER
            alerts[node_name] = 0
        members[primary].append(node)
    return Membership(members, invalid, conflicts, alerts)


def _matches(exprs: list[tuple[str, str, list[str]]], want: Mapping[str, Any],
             labels: Mapping[str, str]) -> bool:  # fmt: skip
    for key, value in want.items():
        if labels.get(key) != value:
            return False
    for key, op, values in exprs:
        present = key in labels
        if op == "In" and (not present or labels[key] not in values):
            return False
        if op == "NotIn" and present and labels[key] in values:
            return False
        if op == "Exists" and not present:
            return False
        if op == "DoesNotExist" and present:
            return False
    return True


def conflict_message(pool: str, conflicts: Mapping[str, tuple[str, ...]],
                     current: Mapping[str, str]) -> str:  # fmt: skip
    """The ``NodeInTwoPools`` message on ``pool``: each node, its pools, the config it keeps."""
    parts = []
    for node in sorted(conflicts)[:20]:
        pools = conflicts[node]
        parts.append(
            f"node {node} belongs to {len(pools)} custom roles, cannot proceed with this Node "
            f"(pools {', '.join(pools)}); it stays on {current.get(node) or 'its current config'}"
        )
    more = len(conflicts) - len(parts)
    if more > 0:
        parts.append(f"and {more} more nodes")
    return cap("; ".join(parts))
