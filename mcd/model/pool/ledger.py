"""One pool's members, counted the way a refill of its free slots reads them, and kept up to
date node by node (a pass that only refills slots touches the nodes that changed, not every
member). Pure.

A :class:`Ledger` holds each member's :class:`~mcd.model.pool.pools.NodeView` (with any
target still in flight already in it) and, kept as each view is replaced: how many members
are unavailable (upstream ``IsUnavailableForUpdate``), how many a refill cannot weigh alone
(Degraded on the target, which stops the rollout; failed on an older target and out of
service, which go first), and the candidates (not on the target, Ready, schedulable, not
rebooting) in upstream order (``sortNodeList``). :meth:`Ledger.refill` is then what
:func:`mcd.model.pool.rollout.plan_rollout` chooses for a pool without a pause, a policy, a
window, gates, OS reboots, drain forecasts or released drains, and ``None`` when it cannot
say (the caller plans over every node). :meth:`Ledger.of` counts from scratch: a ledger
kept by :meth:`Ledger.put` equals it after any sequence of changes.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from mcd.model.pool.pools import NodeView, max_unavailable
from mcd.model.pool.rollout import stranded_on_old_target

Key = tuple[bool, str, str, str]


def order_key(view: NodeView) -> Key:
    """Upstream ``sortNodeList``'s order (:func:`mcd.model.pool.pools.upstream_order`)."""
    return view.order


@dataclass
class Ledger:
    target: str
    views: dict[str, NodeView] = field(default_factory=dict)
    unavailable: int = 0
    unusual: int = 0
    """Members a refill cannot weigh alone: Degraded (or Unreconcilable) on the target, or
    stranded on an older one (:func:`mcd.model.pool.rollout.stranded_on_old_target`)."""
    candidates: list[Key] = field(default_factory=list)
    """The members that may get the target, in upstream order."""

    @classmethod
    def of(cls, target: str, views: Iterable[NodeView]) -> Ledger:
        """Counted from scratch."""
        ledger = cls(target)
        for view in views:
            ledger.views[view.name] = view
            ledger._count(view, 1, sort=False)
        ledger.candidates.sort()
        return ledger

    def __contains__(self, name: object) -> bool:
        return name in self.views

    def __len__(self) -> int:
        return len(self.views)

    def put(self, view: NodeView) -> None:
        """A member's new view (its counts move; a name not a member is ignored: it is in
        another pool)."""
        before = self.views.get(view.name)
        if before is None or before is view:
            return
        if before == view:
            self.views[view.name] = view
            return
        self._count(before, -1)
        self.views[view.name] = view
        self._count(view, 1)

    def refresh(self, views: Sequence[NodeView]) -> bool:
        """Every member's view, when ``views`` has the same members (else False: count them
        from scratch); a view kept from the last time costs one look."""
        if len(views) != len(self.views) or any(v.name not in self.views for v in views):
            return False
        for view in views:
            self.put(view)
        return True

    def _count(self, view: NodeView, sign: int, sort: bool = True) -> None:
        self.unavailable += sign * view.unavailable
        unusual = (view.desired == self.target and view.degraded) or stranded_on_old_target(view)
        self.unusual += sign * unusual
        if view.desired != self.target and view.schedulable_and_ready and not view.rebooting:
            key = order_key(view)
            if sign < 0:
                del self.candidates[bisect.bisect_left(self.candidates, key)]
            elif sort:
                bisect.insort(self.candidates, key)
            else:  # :meth:`of` sorts them once
                self.candidates.append(key)

    def refill(self, max_unavailable_value: object) -> tuple[str, ...] | None:
        """The nodes that get the target now (upstream order), or None when the members
        need the whole plan (a node Degraded on the target, a stranded one, an invalid
        ``maxUnavailable``)."""
        if self.unusual or not self.target:
            return None
        try:
            limit = max_unavailable(max_unavailable_value, len(self.views))
        except ValueError:
            return None
        capacity = limit - self.unavailable
        return tuple(key[3] for key in self.candidates[: max(capacity, 0)])
