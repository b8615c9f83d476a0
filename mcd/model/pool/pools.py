"""MachineConfigPools and their nodes, as upstream's node controller reads them. Pure.

* label selectors (``matchLabels``, ``matchExpressions`` with In, NotIn, Exists,
  DoesNotExist); an absent selector selects nothing, an empty one everything (the
  controller refuses that: ``SelectingAll``);
* a node's primary pool (``GetPoolsForNode``): one custom pool wins over ``worker``,
  ``master`` wins over everything, two custom pools is an error;
* a node's state (``LayeredNodeState``): done, degraded, ready, unavailable;
* ``maxUnavailable``: a number or a percentage of the pool's nodes, rounded down, at
  least 1 (``GetScaledValueFromIntOrPercent``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

from mcd.model.reboots.requests import REQUESTED_ANNOTATION, NodeReboot
from mcd.model.vocabulary import Annotation, NodeState

MASTER, WORKER = "master", "worker"
ZONE_LABEL = "topology.kubernetes.io/zone"
UPDATE_TAINT = {"key": "UpdateInProgress", "effect": "PreferNoSchedule"}
"""Upstream's ``NodeUpdateInProgressTaint``: on a pool's nodes that still need its target, so
that pods prefer the nodes already updated (and are moved fewer times)."""

Obj = Mapping[str, Any]


class SelectorError(ValueError):
    pass


def selector_matches(selector: Obj | None, labels: Mapping[str, str]) -> bool:
    """metav1.LabelSelector semantics; ``None`` matches nothing."""
    if selector is None:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op = expr.get("key", ""), expr.get("operator", "")
        values = list(expr.get("values") or [])
        if op == "In":
            if labels.get(key) not in values:
                return False
        elif op == "NotIn":
            if key in labels and labels[key] in values:
                return False
        elif op == "Exists":
            if key not in labels:
                return False
        elif op == "DoesNotExist":
            if key in labels:
                return False
        else:
            raise SelectorError(f'"{op}" is not a valid label selector operator')
    return True


def selects_all(selector: Obj | None) -> bool:
    return (
        selector is not None
        and not selector.get("matchLabels")
        and not selector.get("matchExpressions")
    )


def labels_of(obj: Obj) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("labels") or {})


def name_of(obj: Obj) -> str:
    meta = obj.get("metadata")
    name = meta.get("name") if meta else None
    return name if type(name) is str else str(name or "")  # called ~10 times a node a pass


def target_of(pool: Obj) -> str:
    """The rendered config the pool rolls out (``spec.configuration.name``)."""
    return str(((pool.get("spec") or {}).get("configuration") or {}).get("name") or "")


def primary_pool(node: Obj, pools: Sequence[Obj]) -> Obj | None:
    """The pool a node belongs to, or None; ``SelectorError`` as upstream when ambiguous."""
    labels = labels_of(node)
    matching = [p for p in pools if _selects(p, labels)]
    master = next((p for p in matching if name_of(p) == MASTER), None)
    worker = next((p for p in matching if name_of(p) == WORKER), None)
    custom = [p for p in matching if name_of(p) not in (MASTER, WORKER)]
    if len(custom) > 1:
        raise SelectorError(
            f"node {name_of(node)} belongs to {len(custom)} custom roles, "
            "cannot proceed with this Node"
        )
    if master is not None:
        return master
    if custom:
        return custom[0]
    return worker


def _selects(pool: Obj, labels: Mapping[str, str]) -> bool:
    """Does the pool select a node with ``labels``? A pool selecting every node, or whose
    selector is invalid, selects none (the controller says so on that pool only)."""
    selector = (pool.get("spec") or {}).get("nodeSelector")
    if selects_all(selector):
        return False
    try:
        return selector_matches(selector, labels)
    except (SelectorError, AttributeError, TypeError):
        return False


def nodes_for_pool(pool: Obj, pools: Sequence[Obj], nodes: Sequence[Obj]) -> list[Obj]:
    """The nodes whose primary pool is ``pool`` (nodes in error are left out)."""
    out = []
    for node in nodes:
        try:
            primary = primary_pool(node, pools)
        except SelectorError:
            continue
        if primary is not None and name_of(primary) == name_of(pool):
            out.append(node)
    return out


@dataclass(frozen=True, slots=True)
class NodeView:
    """What the controller needs to know about one Node."""

    name: str
    current: str = ""
    desired: str = ""
    state: str = ""
    reason: str = ""
    ready: bool = True
    not_ready_reason: str = ""
    unschedulable: bool = False
    zone: str | None = None
    created: str = ""
    rebooting: bool = False
    """An OS reboot the controller asked for is under way (:mod:`mcd.model.reboots`)."""

    @classmethod
    def of(cls, node: Obj) -> NodeView:
        meta = node.get("metadata") or {}
        ann = meta.get("annotations") or {}
        problem = ""
        for cond in (node.get("status") or {}).get("conditions") or []:
            kind, status = cond.get("type"), cond.get("status")
            if kind == "Ready" and status != "True":
                problem = f"node {meta.get('name')} is reporting NotReady={status}"
            elif kind == "DiskPressure" and status != "False":
                problem = f"node {meta.get('name')} is reporting OutOfDisk={status}"
            elif kind == "NetworkUnavailable" and status != "False":
                problem = f"node {meta.get('name')} is reporting NetworkUnavailable={status}"
            if problem:
                break
        return cls(
            name=str(meta.get("name") or ""),
            current=str(ann.get(Annotation.CURRENT_CONFIG) or ""),
            desired=str(ann.get(Annotation.DESIRED_CONFIG) or ""),
            state=str(ann.get(Annotation.STATE) or ""),
            reason=str(ann.get(Annotation.REASON) or ""),
            ready=not problem,
            not_ready_reason=problem,
            unschedulable=bool((node.get("spec") or {}).get("unschedulable")),
            zone=(meta.get("labels") or {}).get(ZONE_LABEL),
            created=str(meta.get("creationTimestamp") or ""),
            rebooting=REQUESTED_ANNOTATION in ann and NodeReboot.of(ann).pending,
        )

    schedulable_and_ready: bool = field(init=False, repr=False, compare=False)
    """Upstream ``IsNodeReady``: Ready, no disk or network trouble, schedulable."""
    done: bool = field(init=False, repr=False, compare=False)
    """current == desired (both set) and the agent says Done."""
    degraded: bool = field(init=False, repr=False, compare=False)
    failing: bool = field(init=False, repr=False, compare=False)
    """Upstream ``IsNodeMCDFailing``: degraded on the way to another config."""
    order: tuple[bool, str, str, str] = field(init=False, repr=False, compare=False)
    """Upstream ``sortNodeList``'s key: by zone, then oldest first; no zone last."""
    unavailable: bool = field(init=False, repr=False, compare=False)
    """Upstream ``IsUnavailableForUpdate``: not ready or unschedulable, or updating;
    and (beyond upstream) an OS reboot under way.

    A node no controller has targeted yet (no ``desiredConfig``) is not updating: on a
    plain cluster a joining node has no annotations, and counting it would let it
    block its own first config.
    """

    def __post_init__(self) -> None:
        """The states above, worked out once (a pass reads them several times a node)."""
        ready = self.ready and not self.unschedulable
        done = bool(self.current) and self.current == self.desired and self.state == NodeState.DONE
        degraded = self.state in (NodeState.DEGRADED, NodeState.UNRECONCILABLE)
        failing = self.current != self.desired and degraded
        unavailable = (not ready or self.rebooting or (
            bool(self.desired) and not done and not failing))  # fmt: skip
        order = (self.zone is None, self.zone or "", self.created, self.name)
        for name, value in (("schedulable_and_ready", ready), ("done", done),
                            ("degraded", degraded), ("failing", failing), ("order", order),
                            ("unavailable", unavailable)):  # fmt: skip
            object.__setattr__(self, name, value)

    def updated(self, target: str) -> bool:
        return self.done and self.desired == target


_PERCENT = re.compile(r"^(\d+)%$")


def max_unavailable(value: object, total: int) -> int:
    """``spec.maxUnavailable`` scaled to ``total`` nodes; default 1, never below 1."""
    if value is None:
        scaled = 1
    elif isinstance(value, bool):
        raise ValueError("maxUnavailable: invalid value for IntOrString: invalid type: bool")
    elif isinstance(value, int):
        scaled = value
    elif isinstance(value, str):
        match = _PERCENT.match(value)
        if match is None:
            if value.isdigit():
                raise ValueError(
                    "maxUnavailable: invalid value for IntOrString: invalid type: "
                    "string is not a percentage"
                )
            raise ValueError(f'maxUnavailable: invalid value "{value}"')
        scaled = int(match.group(1)) * total // 100
    else:
        raise ValueError("maxUnavailable: invalid value for IntOrString: invalid type")
    if scaled < 0:
        raise ValueError(f"maxUnavailable: must not be negative, got {value}")
    return max(scaled, 1)


def upstream_order(nodes: Sequence[NodeView]) -> list[NodeView]:
    """Upstream ``sortNodeList``: by zone, then oldest first; nodes with no zone last."""
    return sorted(nodes, key=attrgetter("order"))


def has_update_taint(node: Obj) -> bool:
    return any(_is_update_taint(t) for t in (node.get("spec") or {}).get("taints") or [])


def with_update_taint(node: Obj, on: bool) -> list[Any]:
    """The node's taints with (``on``) or without upstream's ``UpdateInProgress`` taint."""
    taints = [t for t in (node.get("spec") or {}).get("taints") or [] if not _is_update_taint(t)]
    return [*taints, dict(UPDATE_TAINT)] if on else taints


def _is_update_taint(taint: object) -> bool:
    return (
        isinstance(taint, Mapping)
        and taint.get("key") == UPDATE_TAINT["key"]
        and taint.get("effect") == UPDATE_TAINT["effect"]
    )
