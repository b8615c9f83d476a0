"""The drain controller (upstream ``pkg/controller/drain``): the agents ask by annotation, the
controller drains, so that no node's credentials can evict anything.

An agent sets ``desiredDrain`` on its Node to ``drain-<config>`` or ``uncordon-<config>``;
each pass (:meth:`DrainController.sync`, from the controller's Node cache) starts an attempt
for every Node whose request is not yet answered in ``lastAppliedDrain`` and whose retry is
due, on a small pool of worker threads, one attempt per node at a time:

* ``uncordon``: uncordon, then answer;
* ``drain``: cordon (again, if someone uncordoned the node meanwhile: the drain begins anew),
  evict with :class:`mcd.cluster.drain.evict.Evictor` for at most one attempt's time, then,
  if the node is still cordoned, answer ``lastAppliedDrain`` = the request. A failed attempt
  is tried again on upstream's cadence (:mod:`mcd.model.drain.cadence`: 1 minute, 5 minutes
  after 10 minutes with ``DrainThresholdExceeded``, ``DrainFailed`` and ``mcc_drain_err``
  past the pool's drain timeout).

While pods hold a drain, the Node gets a Warning Event ``DrainBlocked`` naming each pod and
its PodDisruptionBudget (again whenever that changes), its MachineConfigNode upstream's
``Drained`` Unknown condition ("Error: Node Drain has not succeeded. Error is: ..."), and
:meth:`blocked` feeds the pool's ``DrainBlocked`` condition. Drain state lives in memory, as
upstream's: a new leader begins the drains it finds (the agents' requests are still on the
Nodes).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Protocol

from prometheus_client import Gauge

from mcd.cluster.api import ApiError, Kube, Obj
from mcd.cluster.drain.evict import Evictor
from mcd.cluster.drain.nodes import DrainNodeWriter
from mcd.cluster.node import annotations_of
from mcd.model.drain.cadence import (
    DRAIN_FAILED,
    THRESHOLD_EXCEEDED,
    Cadence,
    after_failure,
    attempt_start,
    go_duration,
)
from mcd.model.drain.report import not_evicted, summary
from mcd.model.vocabulary import Annotation

log = logging.getLogger(__name__)

DRAIN_BLOCKED_EVENT = "DrainBlocked"
Clock = Callable[[], float]


@dataclass
class NodeDrain:
    """What the controller knows of one node's request."""

    request: str
    began: float | None = None  # when the drain began (the cordon), by the clock
    next_at: float = 0.0  # the next attempt is due then
    running: bool = False
    timeout: float = 3600.0
    blocked: str = ""  # who holds the drain now ('' when nothing does)
    told: str = ""  # the last blocked summary sent as an Event
    release: bool = False  # the pool set its own drain timeout: past it, the slot is released
    released: str = ""  # the drain timed out: what held it (the pool gives the slot back)


@dataclass(frozen=True)
class DrainPolicy:
    """A node's drain rules, from its pool: its timeout, and how many of the pool's drains
    may be in flight at once (``maxUnavailable``). ``release``: past the timeout the node's
    slot is released (the pool sets ``mcd-project.github.io/drain-timeout``)."""

    pool: str = ""
    timeout: float = 3600.0
    limit: int = 0  # 0: no limit
    release: bool = False


class DrainMetrics(Protocol):
    """What the drain controller sets (:class:`mcd.controller.service.ControllerMetrics`)."""

    drain_err: Gauge

    def clear_drain_err(self, node: str) -> None: ...


class DrainController:
    def __init__(
        self,
        kube: Kube,
        metrics: DrainMetrics,
        latest: Callable[[str], Obj | None],
        wake: Callable[[], None] = lambda: None,
        observe: Callable[[Obj], None] = lambda _node: None,
        cadence: Cadence | None = None,
        clock: Clock = time.monotonic,
        workers: int = 5,
        backoff: tuple[float, ...] | None = None,
    ) -> None:
        self.kube = kube
        self.metrics = metrics
        self.latest = latest
        self.wake = wake
        self.observe = observe  # each Node written goes back into the cache at once
        self.cadence = cadence or Cadence()
        self.clock = clock
        self.stop = threading.Event()
        self.writer = (
            DrainNodeWriter(kube, stop=self.stop)
            if backoff is None
            else DrainNodeWriter(kube, backoff, self.stop)
        )
        self._states: dict[str, NodeDrain] = {}
        self._lock = threading.Lock()
        self._workers = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="drain")
        self.attempts = 0

    # -- the pass's side -----------------------------------------------------------------

    def sync(self, nodes: list[Obj], policies: Mapping[str, DrainPolicy]) -> None:
        """Start the attempts that are due (never blocks on one); a new drain starts only
        while fewer than its pool's ``limit`` drains are in flight."""
        now = self.clock()
        seen = set()
        due: list[tuple[str, str]] = []
        default = DrainPolicy(timeout=self.cadence.timeout)
        with self._lock:
            in_flight = Counter(
                policies.get(n, default).pool
                for n, s in self._states.items()
                if _verb(s.request) == "drain" and (s.running or s.began is not None)
            )
            for node in nodes:
                name = str((node.get("metadata") or {}).get("name") or "")
                seen.add(name)
                a = annotations_of(node)
                request = a.get(Annotation.DESIRED_DRAIN, "")
                state = self._states.get(name)
                if not _asks(a):
                    if state is not None and not state.running:
                        del self._states[name]
                    continue
                if state is None or state.request != request:
                    if state is not None and state.running:
                        continue  # the attempt sees the new request and stops
                    began = state.began if state and _verb(state.request) == "drain" else None
                    state = NodeDrain(request, began=began)
                    self._states[name] = state
                policy = policies.get(name, default)
                state.timeout, state.release = policy.timeout, policy.release
                if state.running or now < state.next_at or self.stop.is_set():
                    continue
                if _verb(request) == "drain" and state.began is None and policy.limit:
                    if in_flight[policy.pool] >= policy.limit:
                        continue  # at most maxUnavailable drains of a pool at once
                    in_flight[policy.pool] += 1
                state.running = True
                due.append((name, request))
            for name in [n for n, s in self._states.items() if n not in seen and not s.running]:
                del self._states[name]
        for name, request in due:
            self.attempts += 1
            self._workers.submit(self._attempt, name, request)

    def idle(self, nodes: Iterable[Obj]) -> bool:
        """No attempt is kept (running, due or waiting to retry) and none of ``nodes`` asks
        for one: a pass may leave the drains alone."""
        with self._lock:
            if self._states:
                return False
        return not any(_asks((n.get("metadata") or {}).get("annotations") or {}) for n in nodes)

    def blocked(self) -> dict[str, str]:
        """Each node whose drain pods hold now, and what holds it."""
        with self._lock:
            return {n: s.blocked for n, s in self._states.items() if s.blocked}

    def released(self) -> dict[str, str]:
        """Each node whose drain ran past its pool's own timeout, and what held it: the
        pool takes the node's ``desiredConfig`` back and puts it last."""
        with self._lock:
            return {n: s.released for n, s in self._states.items() if s.released}

    def busy(self) -> bool:
        """An attempt is running."""
        with self._lock:
            return any(s.running for s in self._states.values())

    def shutdown(self) -> None:
        self.stop.set()
        self._workers.shutdown(wait=False, cancel_futures=True)

    # -- one attempt, on a worker --------------------------------------------------------

    def _state(self, name: str) -> NodeDrain:
        with self._lock:
            return self._states[name]

    def _attempt(self, name: str, request: str) -> None:
        state = self._state(name)
        retry_at: float | None = None
        try:
            node = self.latest(name)
            if node is None:
                return
            verb = _verb(request)
            if verb == "uncordon":
                log.info("node %s: uncordoning", name)
                self.observe(self.writer.set_unschedulable(name, False))
            elif verb == "drain":
                if not self._drain(node, state):
                    return
                current = self.latest(name) or node
                if not (current.get("spec") or {}).get("unschedulable"):
                    log.info("node %s: externally uncordoned during drain, skipping completion "
                             "annotation", name)  # fmt: skip
                    return
            else:
                log.error("node %s: non-recognized drain verb detected %s", name, verb)
                retry_at = self.clock() + self.cadence.retry
                return
            log.info("node %s: operation successful; applying completion annotation", name)
            self.observe(self.writer.answer(name, request))
            with self._lock:
                state.blocked = ""
        except ApiError as e:
            log.warning("node %s: %s failed: %s", name, request, e)
            retry_at = self.clock() + self.cadence.retry
        except Exception:  # a bug in one attempt must not end the node's drains
            log.exception("node %s: %s failed unexpectedly", name, request)
            retry_at = self.clock() + self.cadence.retry
        finally:
            with self._lock:
                state.running = False
                if retry_at is not None:
                    state.next_at = retry_at
            self.wake()

    def _drain(self, node: Obj, state: NodeDrain) -> bool:
        """One attempt; True when every pod is gone."""
        name = str(node["metadata"]["name"])
        cadence = replace(self.cadence, timeout=state.timeout)
        start = attempt_start(cadence, name, state.began, self.clock())
        if start.timed_out:
            log.error("%s", start.message)
            self.writer.event(node, DRAIN_FAILED, start.message, warning=True)
            self.metrics.drain_err.labels(name).set(1)
            if state.release:
                with self._lock:
                    state.released = state.blocked or "pods still terminating"
                self.wake()
        if state.began is not None and not (node.get("spec") or {}).get("unschedulable"):
            log.info("External actor has unexpectedly uncordoned node %s, cordoning again...", name)
        if state.began is None or not (node.get("spec") or {}).get("unschedulable"):
            log.info("node %s: cordoning", name)
            self.observe(self.writer.set_unschedulable(name, True))
            state.began = self.clock()
        log.info("node %s: initiating drain", name)
        evictor = Evictor(self.kube, name, retry_interval=cadence.evict_retry)
        chosen = evictor.pods()
        outcome = evictor.evict(
            chosen.evict,
            time.monotonic() + cadence.attempt,
            still_wanted=lambda: self._still_wanted(name, state.request),
            on_blocked=lambda text: self._on_blocked(node, state, text),
        )
        if outcome.abandoned:
            log.info("node %s: drain %s given up: %s", name, state.request, outcome.abandoned)
            return False
        if outcome.left:
            error = not_evicted(name, go_duration(cadence.attempt), outcome.left)
            retry = after_failure(cadence, start.elapsed, error)
            log.info("node %s: %s", name, retry.message)
            if retry.threshold_exceeded:
                self.writer.event(node, THRESHOLD_EXCEEDED, retry.message, warning=True)
            self._on_blocked(node, state, summary(outcome.left))
            with self._lock:
                state.next_at = self.clock() + retry.delay
            return False
        with self._lock:
            state.blocked = ""
        self.metrics.clear_drain_err(name)
        log.info("node %s: drain complete (%d pod(s) evicted)", name, len(chosen.evict))
        return True

    def _still_wanted(self, name: str, request: str) -> str:
        if self.stop.is_set():
            return "the controller is stopping"
        node = self.latest(name)
        if node is None:
            return "the node is gone"
        now = annotations_of(node).get(Annotation.DESIRED_DRAIN, "")
        return "" if now == request else f"desiredDrain is now {now!r}"

    def _on_blocked(self, node: Obj, state: NodeDrain, text: str) -> None:
        with self._lock:
            state.blocked = text
            tell = bool(text) and text != state.told
            if tell:
                state.told = text
        if tell:
            self.writer.event(node, DRAIN_BLOCKED_EVENT, f"Drain blocked, retrying: {text}",
                              warning=True)  # fmt: skip
            self.writer.drain_not_succeeded(self.latest(node["metadata"]["name"]) or node, text)
            self.wake()


def _verb(request: str) -> str:
    return request.split("-", 1)[0]


def _asks(annotations: Mapping[str, str]) -> bool:
    """Does the node ask for a drain (or uncordon) it has not had?"""
    request = annotations.get(Annotation.DESIRED_DRAIN, "")
    return bool(request) and request != annotations.get(Annotation.LAST_APPLIED_DRAIN, "")
