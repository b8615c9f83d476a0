"""What is said about a drain that cannot finish: each pod that holds it and why (the
PodDisruptionBudget by name, an eviction error, finalizers of a pod still terminating), in the
agent's ``reason``, the Node's Events and the pool's ``DrainBlocked`` condition."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

DRAIN_BLOCKED = "DrainBlocked"
DRAIN_TIMEOUT = "DrainTimeout"
STILL_TERMINATING = "evicted, still terminating"


def blocked_reason(
    status: int, message: str, causes: Sequence[Mapping[str, Any]], namespace: str, error: str
) -> str:
    """Why an eviction was refused: a 429 names the budget (``blocked by PodDisruptionBudget
    ns/web-pdb: The disruption budget web-pdb needs 1 healthy pods and has 1 currently``)."""
    if status == 429:
        for cause in causes:
            if cause.get("reason") == "DisruptionBudget":
                text = str(cause.get("message", ""))
                budget = text.split()[3] if text.startswith("The disruption budget ") else ""
                where = f"PodDisruptionBudget {namespace}/{budget}: " if budget else ""
                return f"blocked by {where}{text}"
        return f"blocked: {message}"
    return f"eviction failed: {error}"


def terminating(finalizers: Sequence[object]) -> str:
    """What keeps an evicted pod: its finalizers, when it has any."""
    held = f" (finalizers: {', '.join(str(f) for f in finalizers)})" if finalizers else ""
    return f"{STILL_TERMINATING}{held}"


def summary(reasons: Mapping[str, str]) -> str:
    """``ns/a: blocked by ...; ns/b: evicted, still terminating`` (by pod)."""
    return "; ".join(f"{pod}: {why}" for pod, why in sorted(reasons.items()))


def not_evicted(node: str, took: str, left: Mapping[str, str]) -> str:
    """The error of a drain (or of one attempt) that ended with pods left."""
    return f"failed to drain node: {node} after {took}: {len(left)} pod(s) not evicted: " + summary(
        left
    )


def blocked_condition(blocked: Mapping[str, str]) -> tuple[bool, str, str]:
    """The pool's ``DrainBlocked`` condition from each blocked node's summary (status, reason,
    message): who holds which node's drain, budgets named."""
    if not blocked:
        return False, "AsExpected", "no drain is blocked"
    nodes = sorted(blocked)
    message = "; ".join(f"node {n}: {blocked[n]}" for n in nodes)
    return True, "EvictionBlocked", f"{len(nodes)} node(s) cannot be drained: {message}"
