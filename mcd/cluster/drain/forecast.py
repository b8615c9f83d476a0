"""Which nodes' drains a PodDisruptionBudget would block now (:mod:`mcd.model.drain.budgets`),
read from the API server at most every ``ttl`` seconds: one list of the budgets, and, only
when some budget allows no disruption, the pods of those budgets' namespaces (so a cluster
whose budgets all allow a disruption costs one request per ``ttl``, whatever its size)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from mcd.cluster.api import ApiError, Kube, Obj
from mcd.model.drain.budgets import blocking, forecast

log = logging.getLogger(__name__)

PDBS = "/apis/policy/v1/poddisruptionbudgets"


class DrainForecast:
    def __init__(
        self, kube: Kube, ttl: float = 10.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.kube = kube
        self.ttl = ttl
        self.clock = clock
        self._at: float | None = None
        self._blocked: dict[str, str] = {}
        self.requests = 0

    def blocked(self) -> dict[str, str]:
        """Node -> the pods and budgets that would block its drain (cached ``ttl`` seconds;
        on an API error the last forecast stands)."""
        now = self.clock()
        if self._at is not None and now - self._at < self.ttl:
            return self._blocked
        self._at = now
        try:
            self.requests += 1
            pdbs = self.kube.request("GET", PDBS).get("items") or []
            held = blocking(pdbs)
            pods: list[Obj] = []
            for namespace in sorted({str(p["metadata"].get("namespace")) for p in held}):
                self.requests += 1
                listing = self.kube.request("GET", f"/api/v1/namespaces/{namespace}/pods")
                pods.extend(listing.get("items") or [])
            self._blocked = forecast(pods, held)
        except ApiError as e:
            log.warning("Could not read PodDisruptionBudgets (%s); the last forecast stands", e)
        return self._blocked
