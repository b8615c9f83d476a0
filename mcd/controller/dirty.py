"""The controller's "dirty pools": the informers' changes since the last pass, gathered as
they arrive (:class:`mcd.model.pool.touched.Changes`), so that a pass recomputes and writes
only the pools they touch (:func:`mcd.model.pool.touched.touched`).

A pass is a full one (every pool) when a change cannot be named or may move nodes between
pools, and at the latest every ``every`` seconds whatever changed: the safety net for what
no informer reports (the drains' outcomes, pods and budgets, MachineConfigNodes, the clock
of windows and soaks), or :data:`FULL_SHARE` times the CPU the last whole pass took if longer
(at 25,000 nodes a whole pass is a walk of half a second: the passes between, which only
refill slots, touch the changed nodes alone)."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from mcd.cluster.api import Obj
from mcd.model.pool.touched import Changes, touched

FULL_SHARE = 40.0
"""Whole passes (the periodic ones) take at most a fortieth of a core (at 10,000 nodes a
twentieth was a sixth of the controller's CPU in a rollout: 0.3 ms a node update)."""


class DirtyPools:
    def __init__(self, every: float) -> None:
        self.every = every
        self._lock = threading.Lock()
        self._changes = Changes(full=True)  # the first pass is a full one
        self._full_at: float | None = None
        self._was_full = False
        self.period = every
        """Seconds between whole passes now (``every``, or longer: :data:`FULL_SHARE`)."""
        self.passes = {"full": 0, "partial": 0, "skipped": 0}

    def node(self, old: Obj | None, new: Obj | None) -> None:
        with self._lock:
            self._changes.node(old, new)

    def pool(self, old: Obj | None, new: Obj | None) -> None:
        with self._lock:
            self._changes.pool(old, new)

    def config(self, old: Obj | None, new: Obj | None) -> None:
        with self._lock:
            self._changes.config(old, new)

    def named(self, pools: Sequence[str]) -> None:
        """These pools need another pass (work left over: taints beyond a pass's batch)."""
        with self._lock:
            self._changes.pools.update(pools)

    def everything(self) -> None:
        with self._lock:
            self._changes.everything()

    def take(self, now: float) -> Changes:
        """The changes gathered so far (taken before the caches are read: a change that
        arrives meanwhile is in the next pass's); a full pass when one is due."""
        with self._lock:
            changes, self._changes = self._changes, Changes()
        if self._full_at is None:
            changes.everything()
        elif now - self._full_at >= self.period:
            changes.timer = True  # whole, but no node moved pools: the last membership holds
        return changes

    def pools_of(self, changes: Changes, pools: Sequence[Obj], now: float) -> frozenset[str] | None:
        """The pools this pass recomputes, None for every one (a full pass)."""
        found = touched(pools, changes)
        self._was_full = found is None
        if found is None:
            self._full_at = now
            self.passes["full"] += 1
        else:
            self.passes["partial" if found else "skipped"] += 1
        return found

    def took(self, cpu: float) -> None:
        """The CPU the pass just ended took: a whole one sets the period of the next."""
        if self._was_full:
            self.period = max(self.every, FULL_SHARE * cpu)
