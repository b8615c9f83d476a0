"""A pass's Node writes, several at once: a wave of a 5,000-node pool is hundreds of
writes, and one after the other they would hold the next wave back."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from mcd.cluster.api import ApiError, Obj

T = TypeVar("T")
WRITERS = 6
"""Node writes in flight at once (the API connection pool holds 10, three of them watches)."""
TAINT_BATCH = 200
"""Taint writes per pass, after its targets; the rest in the next passes (each write's watch
event wakes one): 4,500 taints at once, a new config's on 5,000 nodes, held a wave back."""


class NodeWrites:
    def __init__(self) -> None:
        self._writers: ThreadPoolExecutor | None = None

    def each(
        self, write: Callable[[T], Obj], items: list[T], observe: Callable[[T, Obj], None]
    ) -> None:
        """``write`` for each item, up to :data:`WRITERS` at once (a wave of a big pool is
        hundreds of Node writes), then ``observe`` each result; a 409 (the node changed
        since it was read: the next pass decides again) leaves the item out; any other error
        is raised once every write that succeeded is observed (the next pass must count a
        node targeted now as targeted)."""
        if len(items) <= 1:
            futures = None
        else:
            if self._writers is None:
                self._writers = ThreadPoolExecutor(WRITERS, thread_name_prefix="node-writer")
            futures = [self._writers.submit(write, item) for item in items]
        error: Exception | None = None
        for i, item in enumerate(items):
            try:
                result = futures[i].result() if futures else write(item)
            except ApiError as e:
                if e.status != 409:
                    error = error or e
                continue
            except Exception as e:  # raised below, once the others are observed
                error = error or e
                continue
            observe(item, result)
        if error is not None:
            raise error
