"""Which nodes of a pool cannot take the pool's config, before the rollout reaches them (pure).

Each agent publishes what its host can apply (:data:`~mcd.model.planning.applicability.
HOST_SUPPORT_ANNOTATION`); a node whose move from its current config to the pool's target
changes a field its host cannot apply would be refused there (``Unreconcilable``). The
controller shows those nodes in the pool condition :data:`CONDITION`, naming each node, its OS
and the fields, so nobody finds out one node at a time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mcd.model.machineconfig import MachineConfig
from mcd.model.planning.applicability import HostSupport, inapplicable

CONDITION = "NodesCannotApply"
REASON_SOME = "FieldsNotApplicable"
REASON_NONE = "AllNodesCanApply"
MESSAGE_LIMIT = 1500


@dataclass(frozen=True)
class Member:
    node: str
    current: MachineConfig | None
    """The node's current config (None: unknown, checked against the empty config)."""
    support: HostSupport | None
    """What the node published (None: nothing yet; assumed able, as upstream)."""


def unfit(target: MachineConfig, members: Sequence[Member], empty: MachineConfig) -> list[str]:
    """One line per node that cannot take ``target``: ``node (OS): field why; ...``."""
    lines = []
    for m in members:
        if m.support is None:
            continue
        found = inapplicable(m.current or empty, target, m.support)
        if found:
            what = "; ".join(str(f) for f in found)
            lines.append(f"{m.node} ({m.support.os or 'unknown OS'}): {what}")
    return lines


def condition(target: str, lines: Sequence[str]) -> tuple[bool, str, str]:
    """(status, reason, message) of :data:`CONDITION`."""
    if not lines:
        return False, REASON_NONE, f"every node that reported its host can apply {target}"
    message = f"{len(lines)} node(s) cannot apply {target}: " + " | ".join(lines)
    if len(message) > MESSAGE_LIMIT:
        message = message[: MESSAGE_LIMIT - 3] + "..."
    return True, REASON_SOME, message
