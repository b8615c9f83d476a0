"""Each node's OS reboot as ``mcd plan --pool`` and ``mcd status --cluster`` show it: what asks
for it and since when, and whether it reboots now, gets the next free slot, or waits and why,
decided by the controller's own rollout (:func:`mcd.model.pool.rollout.plan_rollout`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from mcd.controller.osreboots.step import demand, pool_policy
from mcd.model.pool.canary import HALT_ANNOTATION
from mcd.model.pool.pools import NodeView
from mcd.model.pool.rollout import plan_rollout
from mcd.model.pool.windows import WindowState
from mcd.model.reboots.policy import OS_REBOOTS
from mcd.model.reboots.requests import NodeReboot

REBOOTING, NEXT, WAITING, OFF = "rebooting", "next", "waiting", "not scheduled"


@dataclass(frozen=True)
class RebootRow:
    node: str
    source: str
    since: str
    state: str
    """:data:`REBOOTING`, :data:`NEXT` (a slot is free now), :data:`WAITING` or :data:`OFF`."""
    why: str = ""

    def to_json(self) -> dict[str, str]:
        return {"node": self.node, "source": self.source, "since": self.since,
                "state": self.state, "why": self.why}  # fmt: skip

    def line(self) -> str:
        asked = f"asked by {self.source}" + (f" since {self.since}" if self.since else "")
        return f"{self.node}: OS reboot {self.state} ({asked})" + (
            f": {self.why}" if self.why else "")  # fmt: skip


def _annotations(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return (obj.get("metadata") or {}).get("annotations") or {}


def reboot_rows(
    pool: Mapping[str, Any], views: Sequence[NodeView], nodes: Mapping[str, Mapping[str, Any]],
    now: datetime, window: WindowState | None = None,
) -> tuple[str, tuple[RebootRow, ...]]:  # fmt: skip
    """The pool's OS reboot policy in words, and a row for each node whose OS asks for a
    reboot or that reboots for it now."""
    policy, error = pool_policy(pool)
    states = {v.name: NodeReboot.of(_annotations(nodes.get(v.name) or {})) for v in views}
    asking = {n: s for n, s in states.items() if s.required is not None or s.pending}
    if error or not policy.enabled:
        why = error or f'the rollout policy has no "{OS_REBOOTS}": true'
        text = f"not scheduled ({why})"
        return text, tuple(_row(n, s, OFF, why) for n, s in sorted(asking.items()))
    halted = bool(_annotations(pool).get(HALT_ANNOTATION))
    rollout = plan_rollout(pool, views, window=window, halted=halted,
                           reboots=demand(pool, views, nodes, now))  # fmt: skip
    rows = []
    for name, state in sorted(asking.items()):
        if state.pending:
            rows.append(_row(name, state, REBOOTING, f"requested {state.requested}"))
        elif name in rollout.reboots:
            rows.append(_row(name, state, NEXT, "a slot is free"))
        else:
            rows.append(_row(name, state, WAITING, rollout.reboot_waits.get(name, "")))
    return policy.describe(), tuple(rows)


def _row(name: str, state: NodeReboot, kind: str, why: str) -> RebootRow:
    required = state.required
    source = required.source if required is not None else "the OS"
    return RebootRow(name, source, required.since if required is not None else "", kind, why)
