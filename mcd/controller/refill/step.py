"""Each pool's :class:`~mcd.model.pool.ledger.Ledger`, kept between the controller's passes.

A pass that syncs a pool whole counts its ledger from that pass's views (a view kept from
the last pass costs one look). Between such passes, a pass that only refills slots moves
the ledgers by the nodes that changed: those the Node informer reported, those this process
wrote itself (:meth:`RefillStep.wrote`: their watch events change nothing and name none),
and those whose target was or is in flight (:class:`mcd.controller.writes.InFlight`). A pool
whose last whole sync did not finish has no ledger (its next pass is a whole one)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from mcd.cluster.api import Obj
from mcd.controller.writes import InFlight
from mcd.model.pool.canary import POLICY_ANNOTATION
from mcd.model.pool.ledger import Ledger
from mcd.model.pool.pools import NodeView, name_of, target_of
from mcd.model.pool.windows import WINDOW_ANNOTATION

ViewOf = Callable[[str], NodeView | None]


def plain(pool: Mapping[str, Any]) -> bool:
    """A pool a ledger can refill alone: a target, not paused, no rollout policy and no
    maintenance window (gates: :meth:`mcd.controller.holds.step.HoldStep.applies`)."""
    annotations = (pool.get("metadata") or {}).get("annotations") or {}
    return (bool(target_of(pool)) and not (pool.get("spec") or {}).get("paused")
            and POLICY_ANNOTATION not in annotations
            and WINDOW_ANNOTATION not in annotations)  # fmt: skip


class RefillStep:
    def __init__(self) -> None:
        self._ledgers: dict[str, Ledger] = {}
        self._stale: dict[str, Ledger] = {}
        """Pool -> its ledger while a whole sync of it is under way (refreshed, not counted
        again, when the sync keeps it)."""
        self._flying: dict[str, set[str]] = {}
        """Pool -> the members whose view in the ledger carries a target in flight."""
        self._written: set[str] = set()
        self._lock = threading.Lock()

    def wrote(self, name: str) -> None:
        """A Node this process wrote (into the cache without an informer event)."""
        with self._lock:
            self._written.add(name)

    def keep(self, pool: Mapping[str, Any], views: Sequence[NodeView], flying: Collection[str],
             targets: Collection[str] = ()) -> None:  # fmt: skip
        """A whole sync of a :func:`plain` ``pool`` read ``views`` (the targets in flight in
        them; ``targets`` handed out now and not yet in them)."""
        name, target = name_of(pool), target_of(pool)
        if not plain(pool):
            return
        if targets:
            views = [replace(v, desired=target) if v.name in targets else v for v in views]
        ledger = self._ledgers.pop(name, None) or self._stale.pop(name, None)
        if ledger is None or ledger.target != target or not ledger.refresh(views):
            ledger = Ledger.of(target, views)
        self._ledgers[name] = ledger
        self._flying[name] = set(flying)

    def drop(self, pool: str) -> None:
        """No refill of ``pool`` until a whole sync keeps its ledger again."""
        ledger = self._ledgers.pop(pool, None)
        if ledger is not None:
            self._stale[pool] = ledger

    def moved(self, changed: Iterable[str], view_of: ViewOf) -> bool:
        """Every ledger moved by the nodes changed since the last pass (and those this
        process wrote); False when one is gone (a whole pass follows)."""
        with self._lock:
            written, self._written = self._written, set()
        for name in {*changed, *written}:
            for ledger in self._ledgers.values():
                if name in ledger:
                    view = view_of(name)
                    if view is None:
                        return False
                    ledger.put(view)
        return True

    def refill(self, pool: Mapping[str, Any], view_of: ViewOf, inflight: InFlight,
               taken: float) -> tuple[str, ...] | None:  # fmt: skip
        """The nodes that get the pool's target now, or None when the pool needs a whole
        sync (no ledger, or one the changes left unable to decide)."""
        name = name_of(pool)
        ledger = self._ledgers.get(name)
        if ledger is None or ledger.target != target_of(pool):
            return None
        flying = inflight.of(ledger, taken)
        for node in {*self._flying.get(name, ()), *flying}:
            view = view_of(node)
            if view is None:  # gone: the next whole pass counts the members again
                self.drop(name)
                return None
            ledger.put(replace(view, desired=flying[node]) if node in flying else view)
        self._flying[name] = set(flying)
        return ledger.refill((pool.get("spec") or {}).get("maxUnavailable"))

    def plans(
        self, pools: Sequence[Obj], changed: Iterable[str], view_of: ViewOf,
        inflight: InFlight, taken: float, whole: Callable[[Obj], bool],
    ) -> list[tuple[Obj, tuple[str, ...]]] | None:  # fmt: skip
        """Each pool's targets now (a pool with no slot free, or whose last nodes are still
        updating, has none: its status follows with the next whole sync), or None when one
        needs a whole sync now (``whole``, not :func:`plain`, no ledger, a change the
        ledger cannot weigh, or every member updated: a rollout's end is reported at once)."""
        if not pools or not self.moved(changed, view_of):
            return None
        plans = []
        for pool in pools:
            if whole(pool) or not plain(pool):
                return None
            targets = self.refill(pool, view_of, inflight, taken)
            ledger = self._ledgers.get(name_of(pool))
            if targets is None or ledger is None:
                return None
            if not targets and not ledger.candidates and not ledger.unavailable:
                return None
            if targets:
                plans.append((pool, targets))
        return plans

    def handed(self, pool: str, targets: Iterable[str]) -> None:
        """``targets`` were handed to the writers: in flight (they leave the candidates)."""
        ledger = self._ledgers.get(pool)
        if ledger is None:
            return
        for node in targets:
            view = ledger.views.get(node)
            if view is not None:
                ledger.put(replace(view, desired=ledger.target))
                self._flying.setdefault(pool, set()).add(node)
