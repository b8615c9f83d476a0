"""Draining the node before a disruptive update, and uncordoning after it.

Two modes:

* ``self`` (default; clusters without the upstream controller): mcd cordons,
  evicts the node's pods in parallel through the eviction API (so
  PodDisruptionBudgets are honoured; a 429 is retried every few seconds),
  waits for them to be gone, and gives up after ``timeout`` with a reason that
  names each pod still there and the budget blocking it. DaemonSet pods,
  mirror pods and finished pods are left alone. The node is uncordoned after
  the update only if mcd did the cordon: a node an admin cordoned stays so.
* ``controller``: the upstream handshake. mcd sets ``desiredDrain`` to
  ``drain-<config>`` (``uncordon-<config>``) and waits for the controller to
  echo it in ``lastAppliedDrain``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Protocol

from mcd.cluster.api import ApiError, Kube, Obj
from mcd.cluster.events import EventRecorder, Reason
from mcd.cluster.node import NodeWriter, annotations_of
from mcd.model.vocabulary import Annotation, drain_request, uncordon_request

log = logging.getLogger(__name__)

CORDONED_BY = "mcd/cordoned-by"
"""Set when mcd cordoned the node, so that only mcd's own cordon is undone."""
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
DEFAULT_TIMEOUT = 3600.0


class DrainError(Exception):
    """The drain did not complete; the message names what blocked it."""


class DrainAbandoned(DrainError):
    """The drain was given up because its target is no longer wanted (the message says why)."""


StillWanted = Callable[[], str]
"""Asked while a drain waits: '' to go on, else why the drain's target is no longer wanted."""


class Drainer(Protocol):
    def drain(self, config_name: str, still_wanted: StillWanted | None = None) -> None: ...

    def uncordon(self, config_name: str) -> None: ...


def _ref(pod: Obj) -> str:
    meta = pod["metadata"]
    return f"{meta.get('namespace', '')}/{meta['name']}"


def _human(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes}m{secs}s"


def _failed(events: EventRecorder | None, reason: Reason, message: str) -> DrainError:
    """The error to raise, once the Warning event saying the same has been recorded."""
    if events:
        events.record(reason, message)
    return DrainError(message)


def evictable(pod: Obj) -> bool:
    """What ``kubectl drain --ignore-daemonsets --force`` would evict."""
    meta = pod.get("metadata") or {}
    if MIRROR_ANNOTATION in (meta.get("annotations") or {}):
        return False
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return False
    return not any(
        ref.get("kind") == "DaemonSet" and ref.get("controller")
        for ref in meta.get("ownerReferences") or []
    )


@dataclass
class _Blocked:
    reasons: dict[str, str] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    on_change: Callable[[str], None] | None = None
    still_wanted: StillWanted | None = None
    abandoned: str = ""

    def give_up(self) -> bool:
        """True once the drain's target is no longer wanted (asked of ``still_wanted``)."""
        if not self.abandoned and self.still_wanted is not None:
            why = self.still_wanted()
            with self.lock:
                self.abandoned = self.abandoned or why
        return bool(self.abandoned)

    def clear(self, pod: str) -> None:
        with self.lock:
            self.reasons.pop(pod, None)

    def set(self, pod: str, reason: str) -> None:
        with self.lock:
            changed = self.reasons.get(pod) != reason
            self.reasons[pod] = reason
            summary = "; ".join(f"{p}: {r}" for p, r in sorted(self.reasons.items()))
        if changed and self.on_change is not None:
            self.on_change(summary)


class SelfDrainer:
    """Cordon and evict through the API (the historical upstream MCD-side drain)."""

    def __init__(
        self,
        kube: Kube,
        writer: NodeWriter,
        events: EventRecorder | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        retry_interval: float = 5.0,
        poll_interval: float = 0.5,
        parallelism: int = 16,
        on_blocked: Callable[[str], None] | None = None,
        report_terminating_after: float = 10.0,
    ) -> None:
        self.kube = kube
        self.on_blocked = on_blocked
        self.writer = writer
        self.events = events
        self.timeout = timeout
        self.retry_interval = retry_interval
        self.poll_interval = poll_interval
        self.parallelism = parallelism
        self.report_terminating_after = report_terminating_after
        self.evictions = 0

    @property
    def node_name(self) -> str:
        return self.writer.node_name

    def cordon(self, config_name: str) -> None:
        node = self.writer.current()
        if (node.get("spec") or {}).get("unschedulable") and CORDONED_BY not in annotations_of(
            node
        ):
            log.info(
                "Node %s was already cordoned by someone else; it will stay cordoned",
                self.node_name,
            )
            return
        self.writer.set_unschedulable(True, {CORDONED_BY: config_name})
        if self.events:
            self.events.record(Reason.CORDON, "Cordoned node to apply update")

    def drain(self, config_name: str, still_wanted: StillWanted | None = None) -> None:
        start = time.monotonic()
        self.cordon(config_name)
        if self.events:
            self.events.record(Reason.DRAIN, "Draining node to update config.")
        pods = self._pods()
        log.info("Draining node %s: %d pod(s) to evict", self.node_name, len(pods))
        blocked = _Blocked(on_change=self._report_blocked, still_wanted=still_wanted)
        deadline = start + self.timeout
        with ThreadPoolExecutor(max_workers=max(1, min(self.parallelism, len(pods)))) as pool:
            results = list(pool.map(lambda p: self._evict_and_wait(p, deadline, blocked), pods))
        if blocked.abandoned:
            log.info("Drain of node %s for %s abandoned: %s",
                     self.node_name, config_name, blocked.abandoned)  # fmt: skip
            raise DrainAbandoned(blocked.abandoned)
        left = [p for p, done in zip(pods, results, strict=True) if not done]
        if left:
            details = "; ".join(
                f"{_ref(p)}: {blocked.reasons.get(_ref(p), 'still terminating')}" for p in left
            )
            message = (
                f"failed to drain node: {self.node_name} after {_human(self.timeout)}: "
                f"{len(left)} pod(s) not evicted: {details}"
            )
            raise _failed(self.events, Reason.FAILED_TO_DRAIN, message)
        log.info("drain complete; Successful drain took %.3f seconds", time.monotonic() - start)

    def _report_blocked(self, summary: str) -> None:
        """Say which pods hold the drain, and why, while it still retries or waits."""
        if self.on_blocked is None or not summary:
            return
        if "evicted, still terminating" in summary and "blocked" not in summary:
            self.on_blocked(f"drain of node {self.node_name} waiting for pods to terminate: "
                            f"{summary}")  # fmt: skip
        else:
            self.on_blocked(f"drain of node {self.node_name} blocked, retrying: {summary}")

    def _pods(self) -> list[Obj]:
        listing = self.kube.request(
            "GET", "/api/v1/pods", {"fieldSelector": f"spec.nodeName={self.node_name}"}
        )
        pods = [p for p in listing.get("items") or [] if evictable(p)]
        skipped = len(listing.get("items") or []) - len(pods)
        if skipped:
            log.info("Not evicting %d DaemonSet, mirror or finished pod(s)", skipped)
        return pods

    def _evict_and_wait(self, pod: Obj, deadline: float, blocked: _Blocked) -> bool:
        meta = pod["metadata"]
        namespace, name, uid = meta.get("namespace", "default"), meta["name"], meta.get("uid")
        path = f"/api/v1/namespaces/{namespace}/pods/{name}"
        body = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
        }
        while True:
            try:
                self.evictions += 1
                self.kube.request("POST", f"{path}/eviction", body=body)
                log.info("evicting pod %s", _ref(pod))
                blocked.clear(_ref(pod))
                break
            except ApiError as e:
                if e.status == 404:
                    blocked.clear(_ref(pod))
                    return True
                reason = _blocked_reason(e, namespace)
                blocked.set(_ref(pod), reason)
                log.info(
                    "error when evicting pod %s (will retry after %gs): %s",
                    _ref(pod),
                    self.retry_interval,
                    reason,
                )
            if time.monotonic() + self.retry_interval > deadline:
                return False
            if self._sleep_or_give_up(self.retry_interval, blocked):
                return False
        evicted = time.monotonic()
        while time.monotonic() < deadline:
            try:
                current = self.kube.request("GET", path)
            except ApiError as e:
                if e.status == 404:
                    blocked.clear(_ref(pod))
                    return True
                current = {}
            if current and current.get("metadata", {}).get("uid") != uid:
                blocked.clear(_ref(pod))
                return True  # a new pod of the same name
            if current and time.monotonic() - evicted >= self.report_terminating_after:
                blocked.set(_ref(pod), _terminating(current))
            if self._sleep_or_give_up(self.poll_interval, blocked):
                return False
        blocked.set(_ref(pod), "evicted but still terminating")
        return False

    def _sleep_or_give_up(self, seconds: float, blocked: _Blocked) -> bool:
        """Wait ``seconds`` unless the drain's target is no longer wanted (True)."""
        end = time.monotonic() + seconds
        while True:
            if blocked.give_up():
                return True
            left = end - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(left, 1.0))

    def uncordon(self, config_name: str) -> None:
        node = self.writer.current()
        if CORDONED_BY not in annotations_of(node):
            if (node.get("spec") or {}).get("unschedulable"):
                log.info("Leaving node %s cordoned: mcd did not cordon it", self.node_name)
            return
        self.writer.set_unschedulable(False, {CORDONED_BY: None})
        if self.events:
            self.events.record(
                Reason.UNCORDON,
                f"Update completed for config {config_name} and node has been uncordoned",
            )


def _terminating(pod: Obj) -> str:
    """What keeps an evicted pod: its finalizers, when it has any."""
    finalizers = [str(f) for f in (pod.get("metadata") or {}).get("finalizers") or []]
    held = f" (finalizers: {', '.join(finalizers)})" if finalizers else ""
    return f"evicted, still terminating{held}"


def _blocked_reason(e: ApiError, namespace: str) -> str:
    if e.status == 429:
        for cause in e.causes:
            if cause.get("reason") == "DisruptionBudget":
                message = str(cause.get("message", ""))
                budget = message.split()[3] if message.startswith("The disruption budget ") else ""
                where = f"PodDisruptionBudget {namespace}/{budget}: " if budget else ""
                return f"blocked by {where}{message}"
        return f"blocked: {e.message}"
    return f"eviction failed: {e}"


class ControllerDrainer:
    """The upstream handshake: the controller answers ``desiredDrain`` in ``lastAppliedDrain``."""

    def __init__(
        self,
        writer: NodeWriter,
        events: EventRecorder | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        poll_interval: float = 10.0,
    ) -> None:
        self.writer = writer
        self.events = events
        self.timeout = timeout
        self.poll_interval = poll_interval

    def drain(self, config_name: str, still_wanted: StillWanted | None = None) -> None:
        request = drain_request(config_name)
        if annotations_of(self.writer.get()).get(Annotation.LAST_APPLIED_DRAIN) == request:
            log.info("drain is already completed on this node")
            return
        log.info("Update prepared; requesting cordon and drain via annotation to controller")
        if self.events:
            self.events.record(Reason.CORDON, "Cordoned node to apply update")
            self.events.record(Reason.DRAIN, "Draining node to update config.")
        self.writer.set_annotations({Annotation.DESIRED_DRAIN: request})
        if not self._wait(request, still_wanted):
            message = (
                f"failed to drain node: {self.writer.node_name} after 1 hour. Please see "
                "machine-config-controller logs for more information"
            )
            raise _failed(self.events, Reason.FAILED_TO_DRAIN, message)
        log.info("drain complete")

    def uncordon(self, config_name: str) -> None:
        request = uncordon_request(config_name)
        self.writer.set_annotations({Annotation.DESIRED_DRAIN: request})
        if not self._wait(request):
            message = (
                f"failed to uncordon node: {self.writer.node_name}: "
                f"controller did not confirm {request}"
            )
            raise _failed(self.events, Reason.FAILED_TO_UNCORDON, message)

    def _wait(self, request: str, still_wanted: StillWanted | None = None) -> bool:
        deadline = time.monotonic() + self.timeout
        while True:
            if annotations_of(self.writer.get()).get(Annotation.LAST_APPLIED_DRAIN) == request:
                return True
            if time.monotonic() >= deadline:
                return False
            why = still_wanted() if still_wanted is not None else ""
            if why:
                log.info("Drain request %s abandoned: %s", request, why)
                raise DrainAbandoned(why)
            time.sleep(self.poll_interval)
