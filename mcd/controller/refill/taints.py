"""Upstream's ``UpdateInProgress:PreferNoSchedule`` taint on a pool's nodes not yet targeted
(taken off in the same write that targets a node).

Waited for, :data:`~mcd.controller.writes.TAINT_BATCH` a pass. In the background (the
controller's), :data:`~mcd.controller.writes.QUEUED` at most queued, the nodes the rollout
reaches last first: a whole sync orders every node that needs one and keeps the rest of
that order (for :data:`WALK` seconds, while the target stays), and each pass queues the next
of them (each looked at again in the cache first), so the taints go on without a walk over
every node each pass."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any

from mcd.cluster.api import Obj
from mcd.cluster.pools import PoolWriter
from mcd.controller.writes import QUEUED, TAINT_BATCH, InFlight, NodeWrites
from mcd.model.pool.pools import NodeView, name_of, target_of, upstream_order, with_update_taint

WALK = 30.0
"""Seconds a background walk's order is kept while the pool's target and size stay: the whole
syncs between queue the next of it (at 25,000 nodes the walk and its order were a quarter of
a whole sync); a node found busy or queued then is looked at again by the next walk."""
Facts = Callable[[Mapping[str, Any]], tuple[NodeView, bool]]
Item = tuple[str, list[Any], str]
Lookup = Callable[[str], Mapping[str, Any] | None]


@dataclass
class Taints:
    writer: PoolWriter
    writes: NodeWrites
    inflight: InFlight
    observe_node: Callable[[Obj], None]
    facts: Facts
    """A Node's view and whether it carries the taint (kept per resourceVersion)."""
    background: bool
    _left: dict[str, deque[str]] = field(default_factory=dict)
    """Pool -> the nodes a whole sync found needing a taint change, not yet queued."""
    _walked: dict[str, tuple[tuple[str, int], float]] = field(default_factory=dict)
    """Pool -> (its target and size, when) of the last walk over its nodes."""

    def sync(
        self, pool: Mapping[str, Any], members: Iterable[Mapping[str, Any]],
        latest: MutableMapping[str, Mapping[str, Any]], flying: Iterable[str],
    ) -> bool:  # fmt: skip
        """The taints of a whole sync of ``pool`` (``latest``: its Nodes as this pass has
        them; waited for, each one written goes in); False when work is left for the next
        pass that no refill will do (in the background, the refills do it)."""
        name, target = name_of(pool), target_of(pool)
        members = list(members)
        key, now = (target, len(members)), time.monotonic()
        if self.background and self._walked.get(name, ((), -WALK))[0] == key and (
            now - self._walked[name][1] < WALK):  # fmt: skip
            self.more(pool, latest.get)  # the order kept from the last walk goes on
            return True
        self._walked[name] = (key, now)
        self._left.pop(name, None)
        queued = self.writes.queued() if self.background else frozenset()
        due: list[tuple[NodeView, Mapping[str, Any], bool]] = []
        busy = {*flying, *self.inflight.names()}
        for cached in members:
            if name_of(cached) in busy:
                continue  # its target write takes the taint off
            node = latest.get(name_of(cached), cached)
            view, tainted = self.facts(node)
            if (view.desired != target) != tainted and view.name not in queued:
                due.append((view, node, tainted))
        if self.background:  # in the order kept for the passes after: the first queued now
            order = upstream_order([d[0] for d in due])
            self._left[name] = deque(v.name for v in reversed(order))
            self.more(pool, latest.get)
            return True
        todo = [_item(node, tainted) for _view, node, tainted in due[:TAINT_BATCH]]
        self.writes.each(self._write, todo, lambda _i, w: self._taken(w, latest))
        return len(due) <= TAINT_BATCH

    def more(self, pool: Mapping[str, Any], lookup: Lookup) -> None:
        """The next of the taints a whole sync left, queued in the background (each node
        looked at again: targeted, written or gone since, it is skipped)."""
        name, target = name_of(pool), target_of(pool)
        left = self._left.get(name)
        if not left or not self.background:
            return
        queued = self.writes.queued()
        room, busy = QUEUED - len(queued), self.inflight.names()
        todo: list[Item] = []
        while left and len(todo) < room:
            node = lookup(left.popleft())
            if node is None or name_of(node) in busy or name_of(node) in queued:
                continue
            view, tainted = self.facts(node)
            if (view.desired != target) != tainted:
                todo.append(_item(node, tainted))
        if todo and not self.writes.later(lambda t: t[0], self._write, todo,
                                          lambda _i, w: self._taken(w, None)):  # fmt: skip
            left.extendleft(reversed([t[0] for t in todo]))  # not queued: first next time

    def left(self, pool: str) -> int:
        """Taint changes a whole sync left for the refill passes."""
        return len(self._left.get(pool) or ())

    def _write(self, item: Item) -> Obj:
        return self.writer.set_taints(*item)

    def _taken(self, written: Obj, latest: MutableMapping[str, Mapping[str, Any]] | None) -> None:
        self.observe_node(written)
        if latest is not None:  # waited for: the pass's ``latest`` (in the background, over)
            latest[name_of(written)] = written


def _item(node: Mapping[str, Any], tainted: bool) -> Item:
    return (name_of(node), with_update_taint(node, not tainted),
            str((node.get("metadata") or {}).get("resourceVersion") or ""))  # fmt: skip
