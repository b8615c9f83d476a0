"""The container restarts of the pods on given nodes (for a pool's rollout policy: pods
crash-looping more than before the update), one list per node, cached ``ttl`` seconds."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection

from mcd.cluster.api import ApiError, Kube
from mcd.model.pool.canary import pod_restarts

log = logging.getLogger(__name__)


class PodRestarts:
    def __init__(
        self, kube: Kube, ttl: float = 15.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.kube = kube
        self.ttl = ttl
        self.clock = clock
        self._seen: dict[str, tuple[float, tuple[int, tuple[str, ...]]]] = {}
        self.requests = 0

    def of(self, nodes: Collection[str]) -> dict[str, tuple[int, tuple[str, ...]]]:
        """Node -> (container restarts, pods in CrashLoopBackOff); a node whose pods could
        not be listed is left out (no verdict on it this time)."""
        now = self.clock()
        out = {}
        for node in nodes:
            cached = self._seen.get(node)
            if cached is not None and now - cached[0] < self.ttl:
                out[node] = cached[1]
                continue
            try:
                self.requests += 1
                listing = self.kube.request(
                    "GET", "/api/v1/pods", {"fieldSelector": f"spec.nodeName={node}"}
                )
            except ApiError as e:
                log.warning("Could not list the pods on node %s: %s", node, e)
                continue
            figures = pod_restarts(listing.get("items") or [])
            self._seen[node] = (now, figures)
            out[node] = figures
        if len(self._seen) > 4 * max(len(nodes), 100):
            self._seen = {n: v for n, v in self._seen.items() if n in nodes}
        return out
