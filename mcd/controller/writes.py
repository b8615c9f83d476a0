"""A pass's Node writes, several at once: a wave of a 5,000-node pool is hundreds of
writes, and one after the other they would hold the next wave back."""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Container
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from mcd.cluster.api import ApiError, Obj

log = logging.getLogger(__name__)
T = TypeVar("T")
WRITERS = 16
"""Node writes in flight at once (each waits on the API server: at 5,000 nodes a wave's 500
targets, 6 at a time, took 2-5 s on a loaded server; at 25,000 nodes 10 at a time, under
load, kept 1,000 of 2,500 slots empty). 32 cost more CPU a write, the GIL passed among them,
for no faster rollout on a quiet machine: 2.04x against 1.80x the pacer's CPU a write at
10,000 nodes, both rollouts within 1.11x the pacer at 10,000 and 25,000 nodes with 16."""
CONNECTIONS = 48
"""The controller's API connections: 3 watches, the pass's own requests, :data:`WRITERS`,
:data:`BACKGROUND` and the drain controller's 5 workers, each with one of its own (a full
pool closes the connection a request used: a TLS handshake for the next)."""
TAINT_BATCH = 200
"""Taint writes per pass, after its targets; the rest in the next passes (each write's watch
event wakes one): 4,500 taints at once, a new config's on 5,000 nodes, held a wave back."""
BACKGROUND = 2
"""Writes in flight at once in the background (:meth:`NodeWrites.later`)."""
QUEUED = 12
"""Background writes queued at most: the rest wait for a later pass (4,500 queued at once
raced the targets, 409s, and held the whole wave's objects)."""
RETRY = 5.0
"""Seconds no background write is queued after one failed (other than a 409): a refusal that
lasts (RBAC, a webhook) must not become a write every pass."""


class Workers:
    """Jobs run on ``count`` threads in the order given, none waited for: a queue and its
    threads, no future per job (a pass hands out hundreds of writes at once: at 10,000
    nodes the futures and their locks were a sixth of a target write's Python time)."""

    def __init__(self, count: int, name: str) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._cancelled = False
        self._count = count
        for i in range(count):
            threading.Thread(target=self._run, name=f"{name}_{i}", daemon=True).start()

    def submit(self, job: Callable[[], None]) -> None:
        self._jobs.put(job)

    def cancel(self) -> None:
        """No job not yet started runs; each thread ends after the job it is running."""
        self._cancelled = True
        for _ in range(self._count):
            self._jobs.put(None)

    def _run(self) -> None:
        while (job := self._jobs.get()) is not None and not self._cancelled:
            try:
                job()
            except Exception:  # a job reports its own outcome; this one could not
                log.exception("A node write failed unexpectedly")


class NodeWrites:
    def __init__(self) -> None:
        self._writers: ThreadPoolExecutor | None = None
        self._handed: Workers | None = None
        self._background: ThreadPoolExecutor | None = None
        self._queued: set[str] = set()
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._failed_at = -RETRY

    def later(self, key: Callable[[T], str], write: Callable[[T], Obj], items: list[T],
              observe: Callable[[T, Obj], None]) -> bool:  # fmt: skip
        """``write`` items in the background, :data:`BACKGROUND` at a time, without waiting
        (a pass's targets, the pace of a rollout, never wait on these), up to
        :data:`QUEUED` queued; an item whose ``key`` is still queued is left out; a failed
        write is logged and left to a later pass (a 409: the node changed, its event brings
        one; any other failure: none queued for :data:`RETRY` seconds). False when items
        were left for a later call."""
        if time.monotonic() - self._failed_at < RETRY:
            return True  # the periodic full pass comes back to them
        if self._background is None:
            self._background = ThreadPoolExecutor(BACKGROUND, thread_name_prefix="node-later")
        for item in items:
            name = key(item)
            with self._lock:
                if name in self._queued:
                    continue
                if len(self._queued) >= QUEUED:
                    return False
                self._queued.add(name)
            self._background.submit(self._one, name, write, item, observe)
        return True

    def queued(self) -> frozenset[str]:
        """The keys of the background writes queued or in flight."""
        with self._lock:
            return frozenset(self._queued)

    def _one(self, name: str, write: Callable[[T], Obj], item: T,
             observe: Callable[[T, Obj], None]) -> None:  # fmt: skip
        try:
            observe(item, write(item))
        except ApiError as e:
            if e.status != 409:
                self._failed_at = time.monotonic()
                log.warning("Node %s: background write failed: %s", name, e)
        except Exception:  # a later pass tries again
            self._failed_at = time.monotonic()
            log.exception("Node %s: background write failed unexpectedly", name)
        finally:
            with self._lock:
                self._queued.discard(name)
                if not self._queued:
                    self._idle.notify_all()

    def soon(self, job: Callable[[], None]) -> None:
        """``job`` on the writers, not waited for (a pass's targets: the pass goes on, the
        job reports its own outcome)."""
        if self._handed is None:
            self._handed = Workers(WRITERS, "node-target")
        self._handed.submit(job)

    def cancel(self) -> None:
        """Drop every write not yet sent (the Lease is lost or given back: another replica
        may act soon); one in flight ends on its own."""
        for pool in (self._writers, self._background):
            if pool is not None:
                pool.shutdown(wait=False, cancel_futures=True)
        if self._handed is not None:
            self._handed.cancel()
        self._writers = self._background = self._handed = None
        with self._lock:
            self._queued.clear()

    def drained(self, timeout: float) -> bool:
        """Wait until no background write is queued (tests); False on timeout."""
        with self._lock:
            return self._idle.wait_for(lambda: not self._queued, timeout)

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


class InFlight:
    """Targets handed to the writers and not yet in what a pass reads (``maxUnavailable``
    rests on this): a node counts as targeted from the moment its write is handed out until
    a snapshot taken after the API server answered shows it. A refused write (a 409, any
    error) is forgotten at once: the node was not targeted."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._targets: dict[str, tuple[str, float | None]] = {}

    def begin(self, node: str, target: str) -> None:
        with self._lock:
            self._targets[node] = (target, None)

    def write(self, pool: str, node: str, target: str, write: Callable[[str], Obj],
              observe: Callable[[Obj], None]) -> None:  # fmt: skip
        """One target write handed out (:meth:`begin`), on a writer: the written Node into
        the cache (``observe``), then answered; refused, it is forgotten (the next pass
        decides again)."""
        try:
            result = write(node)
        except ApiError as e:
            self.answered(node, target, ok=False)
            if e.status != 409:  # 409: the node changed since it was read
                log.warning("Pool %s: node %s: could not set desiredConfig: %s", pool, node, e)
            return
        except Exception:
            self.answered(node, target, ok=False)
            log.exception("Pool %s: node %s: setting desiredConfig failed unexpectedly", pool, node)
            return
        observe(result)
        self.answered(node, target, ok=True)

    def answered(self, node: str, target: str, ok: bool) -> None:
        """The API server's answer to the write of ``target``: call once the written Node is
        in the cache (a snapshot taken after this holds it)."""
        with self._lock:
            if self._targets.get(node, ("", None))[0] != target:
                return  # a later write of the node took its place
            if ok:
                self._targets[node] = (target, time.monotonic())
            else:
                del self._targets[node]

    def of(self, nodes: Container[str], taken: float) -> dict[str, str]:
        """Of ``nodes``, those a snapshot read at ``taken`` may not show targeted yet, and
        their targets; the ones it does show are forgotten (a look at each target in flight,
        not at each node)."""
        with self._lock:
            out: dict[str, str] = {}
            for node, (target, at) in list(self._targets.items()):
                if node not in nodes:
                    continue
                if at is not None and at < taken:
                    del self._targets[node]
                else:
                    out[node] = target
            return out

    def names(self) -> frozenset[str]:
        """The nodes in flight now (one look for a walk over many)."""
        with self._lock:
            return frozenset(self._targets)

    def __contains__(self, node: object) -> bool:
        with self._lock:
            return node in self._targets
