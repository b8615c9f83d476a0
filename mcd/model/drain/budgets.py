"""Would a node's drain be blocked now? A forecast from its pods and the PodDisruptionBudgets,
so that the rollout takes those nodes last (MCO#2059: nodes a budget holds took the slots
for an hour each). Pure.

A budget blocks when its status allows no disruption (``disruptionsAllowed`` 0, or no
status yet: the eviction API then refuses too). It covers the pods of its namespace its
``selector`` matches (policy/v1: an empty selector matches every pod of the namespace, an
absent one none). Only pods a drain would evict count (:func:`mcd.model.drain.pods.evictable`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mcd.model.drain.pods import evictable, pod_ref

Obj = Mapping[str, Any]

DRAIN_RELEASED = "mcd-project.github.io/drain-released"
"""On a Node whose drain ran past its pool's ``drain-timeout``: ``<target>: <message>``, the
config it was released from and the pods that held it."""


def released_for(node: Obj) -> str:
    """The target config a node's drain was released from ('' when none)."""
    value = ((node.get("metadata") or {}).get("annotations") or {}).get(DRAIN_RELEASED)
    return str(value).split(": ", 1)[0] if value else ""


def released_from(nodes: Mapping[str, Obj], target: str) -> set[str]:
    """Of ``nodes`` (by name), those whose drain was released from ``target`` (one look at
    each node's annotations: a pass asks it of every member)."""
    out = set()
    for name, node in nodes.items():
        value = ((node.get("metadata") or {}).get("annotations") or {}).get(DRAIN_RELEASED)
        if value and str(value).split(": ", 1)[0] == target:
            out.add(name)
    return out


def blocking(pdbs: Sequence[Obj]) -> list[Obj]:
    """The budgets that refuse every eviction now."""
    out = []
    for pdb in pdbs:
        status = pdb.get("status") or {}
        allowed = status.get("disruptionsAllowed")
        meta = pdb.get("metadata") or {}
        observed = status.get("observedGeneration")
        stale = observed is not None and observed < (meta.get("generation") or 0)
        if not isinstance(allowed, int) or allowed <= 0 or stale:
            out.append(pdb)
    return out


def selects(selector: object, labels: Mapping[str, str]) -> bool:
    """policy/v1 semantics: None selects nothing, ``{}`` every pod; an operator a label
    selector does not know selects nothing (the API server would have refused it)."""
    if not isinstance(selector, Mapping):
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op = str(expr.get("key", "")), expr.get("operator")
        values = [str(v) for v in expr.get("values") or []]
        present = key in labels
        if op == "In":
            ok = present and labels[key] in values
        elif op == "NotIn":
            ok = not present or labels[key] not in values
        elif op == "Exists":
            ok = present
        elif op == "DoesNotExist":
            ok = not present
        else:
            return False
        if not ok:
            return False
    return True


def forecast(pods: Sequence[Obj], pdbs: Sequence[Obj]) -> dict[str, str]:
    """Node name -> what would block its drain now (``ns/pod: PodDisruptionBudget ns/name
    allows no disruption``, by pod), for the nodes whose drain some budget would block."""
    held = blocking(pdbs)
    if not held:
        return {}
    by_ns: dict[str, list[Obj]] = {}
    for pdb in held:
        by_ns.setdefault(str((pdb.get("metadata") or {}).get("namespace") or ""), []).append(pdb)
    reasons: dict[str, dict[str, str]] = {}
    for pod in pods:
        meta = pod.get("metadata") or {}
        budgets = by_ns.get(str(meta.get("namespace") or ""))
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        if not budgets or not node or not evictable(pod):
            continue
        labels = meta.get("labels") or {}
        for pdb in budgets:
            if selects((pdb.get("spec") or {}).get("selector"), labels):
                name = (pdb.get("metadata") or {}).get("name")
                reasons.setdefault(node, {})[pod_ref(pod)] = (
                    f"PodDisruptionBudget {meta.get('namespace')}/{name} allows no disruption"
                )
                break
    return {
        node: "; ".join(f"{p}: {why}" for p, why in sorted(pods_.items())[:10])
        + (f"; and {len(pods_) - 10} more pods" if len(pods_) > 10 else "")
        for node, pods_ in reasons.items()
    }
