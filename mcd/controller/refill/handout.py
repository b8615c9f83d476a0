"""A pass's targets to their Nodes: one write each (the target, and upstream's update taint
off in the same write), one log line and one ``SetDesiredConfig`` Event a pass (upstream
logs its candidates once a pass). In the background (the controller's), each target counts
as in flight until a pass reads it back (:class:`mcd.controller.writes.InFlight`)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from mcd.cluster.api import Obj
from mcd.cluster.pools import PoolWriter
from mcd.controller.writes import InFlight, NodeWrites
from mcd.model.pool.pools import has_update_taint, name_of, target_of, with_update_taint

log = logging.getLogger("mcd.controller.sync")  # the pass's log line, as before

LOGGED = 20
"""Nodes named in a pass's log line of its targets."""


@dataclass
class HandOut:
    writer: PoolWriter
    writes: NodeWrites
    inflight: InFlight
    observe_node: Callable[[Obj], None]
    background: bool

    def __call__(
        self, pool: Obj, targets: tuple[str, ...],
        latest: MutableMapping[str, Mapping[str, Any]],
    ) -> tuple[str, ...]:  # fmt: skip
        """Write ``targets`` (``latest``: their Nodes as last read; each written one goes
        in); the targets written (all of them in the background: handed out)."""
        name, target = name_of(pool), target_of(pool)

        def write(node: str) -> Obj:
            obj = latest.get(node) or {}
            if has_update_taint(obj):  # one write: the target, and the taint off
                rv = str((obj.get("metadata") or {}).get("resourceVersion") or "")
                return self.writer.set_desired(node, target, with_update_taint(obj, False), rv)
            return self.writer.set_desired(node, target)

        written: list[str] = []

        def targeted(node: str, result: Obj) -> None:
            self.observe_node(result)
            latest[node] = result
            written.append(node)

        if not self.background:
            self.writes.each(write, list(targets), targeted)
            targets = tuple(written)
        for node in targets if self.background else ():
            self.inflight.begin(node, target)
            self.writes.soon(partial(self.inflight.write, name, node, target, write,
                                     self.observe_node))  # fmt: skip
        if targets:  # one line a pass (a line a node was 0.4 ms of CPU per update)
            more = len(targets) - LOGGED
            log.info("Pool %s: setting desiredConfig to %s on %d node(s): %s%s", name, target,
                     len(targets), ", ".join(targets[:LOGGED]),
                     f" and {more} more" if more > 0 else "")  # fmt: skip
            one = len(targets) == 1  # upstream's two texts
            head = f"Targeted node {targets[0]}" if one else f"Set target for {len(targets)} nodes"
            event = partial(self.writer.event, pool, "SetDesiredConfig",
                            f"{head} to MachineConfig: {target}")  # fmt: skip
            if self.background:
                self.writes.soon(event)  # after the targets, on the same writers
            else:
                event()
        return targets
