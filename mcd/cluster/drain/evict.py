"""The eviction engine both drains use: the agent's self-drain and the drain controller.

:meth:`Evictor.pods` lists the node's pods and keeps those :func:`mcd.model.drain.pods.choose`
evicts; :meth:`Evictor.evict` evicts them in parallel through the eviction subresource (so
PodDisruptionBudgets are honoured: a 429 is retried every ``retry_interval`` seconds), waits
for each to be gone (a new pod of the same name counts as gone), and returns the pods left
at the deadline with the reason for each (the budget by name, the error, or the finalizers
of a pod still terminating). ``on_blocked`` hears the summary each time it changes, while
the drain still tries; ``still_wanted`` is asked between tries and ends the wait early.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from mcd.cluster.api import ApiError, Kube
from mcd.cluster.drain.errors import StillWanted
from mcd.model.drain.pods import DrainList, Pod, choose, pod_ref
from mcd.model.drain.report import blocked_reason, summary, terminating

log = logging.getLogger(__name__)


@dataclass
class Outcome:
    left: dict[str, str]  # pod -> why it is still there
    abandoned: str = ""  # why the drain was given up ('' when it was not)


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
            text = summary(self.reasons)
        if changed and self.on_change is not None:
            self.on_change(text)


class Evictor:
    def __init__(
        self,
        kube: Kube,
        node_name: str,
        retry_interval: float = 5.0,
        poll_interval: float = 0.5,
        parallelism: int = 16,
        report_terminating_after: float = 10.0,
    ) -> None:
        self.kube = kube
        self.node_name = node_name
        self.retry_interval = retry_interval
        self.poll_interval = poll_interval
        self.parallelism = parallelism
        self.report_terminating_after = report_terminating_after
        self.evictions = 0

    def pods(self) -> DrainList:
        listing = self.kube.request(
            "GET", "/api/v1/pods", {"fieldSelector": f"spec.nodeName={self.node_name}"}
        )
        chosen = choose(listing.get("items") or [])
        for line in chosen.warnings():
            log.info("node %s: %s", self.node_name, line)
        return chosen

    def evict(
        self,
        pods: Sequence[Pod],
        deadline: float,
        still_wanted: StillWanted | None = None,
        on_blocked: Callable[[str], None] | None = None,
    ) -> Outcome:
        blocked = _Blocked(on_change=on_blocked, still_wanted=still_wanted)
        if not pods:
            return Outcome({})
        with ThreadPoolExecutor(max_workers=max(1, min(self.parallelism, len(pods)))) as pool:
            done = list(pool.map(lambda p: self._evict_and_wait(p, deadline, blocked), pods))
        left = {
            pod_ref(p): blocked.reasons.get(pod_ref(p), "still terminating")
            for p, gone in zip(pods, done, strict=True)
            if not gone
        }
        return Outcome(left, blocked.abandoned)

    def _evict_and_wait(self, pod: Pod, deadline: float, blocked: _Blocked) -> bool:
        meta = pod["metadata"]
        namespace, name, uid = meta.get("namespace", "default"), meta["name"], meta.get("uid")
        ref = pod_ref(pod)
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
                log.info("evicting pod %s", ref)
                blocked.clear(ref)
                break
            except ApiError as e:
                if e.status == 404:
                    blocked.clear(ref)
                    return True
                reason = blocked_reason(e.status, e.message, e.causes, namespace, str(e))
                blocked.set(ref, reason)
                log.info("error when evicting pod %s (will retry after %gs): %s",
                         ref, self.retry_interval, reason)  # fmt: skip
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
                    blocked.clear(ref)
                    return True
                current = {}
            if current and current.get("metadata", {}).get("uid") != uid:
                blocked.clear(ref)
                return True  # a new pod of the same name
            if current and time.monotonic() - evicted >= self.report_terminating_after:
                blocked.set(
                    ref, terminating((current.get("metadata") or {}).get("finalizers") or [])
                )
            if self._sleep_or_give_up(self.poll_interval, blocked):
                return False
        blocked.set(ref, "evicted but still terminating")
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
