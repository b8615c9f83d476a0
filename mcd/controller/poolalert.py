"""``mcc_pool_alert{node}`` (upstream's ``MCCPoolAlert``): 1 while a node is selected by two
custom pools (it then belongs to neither and keeps its config) or by ``master`` and a custom
pool (``master`` wins); 0 for every other node in a pool. Registered on the controller's
registry beside :class:`mcd.controller.service.ControllerMetrics`; a node that leaves every
pool loses its series."""

from __future__ import annotations

from collections.abc import Mapping

from prometheus_client import CollectorRegistry, Gauge


class PoolAlertMetric:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.gauge = Gauge("mcc_pool_alert", "pool status alert", ["node"], registry=registry)
        self._nodes: set[str] = set()
        self._last: dict[str, int] = {}

    def update(self, alerts: Mapping[str, int]) -> None:
        if alerts == self._last:
            return
        self._last = dict(alerts)
        for node in self._nodes - set(alerts):
            self.gauge.remove(node)
        for node, value in alerts.items():
            self.gauge.labels(node).set(value)
        self._nodes = set(alerts)
