"""``mcc_pool_alert{node}`` (upstream's ``MCCPoolAlert``): 1 while a node is selected by two
custom pools (it then belongs to neither and keeps its config) or by ``master`` and a custom
pool (``master`` wins); 0 for every other node in a pool. Registered on the controller's
registry beside :class:`mcd.controller.service.ControllerMetrics`; a node that leaves every
pool loses its series. The series are built when scraped from the last pass's figures (a
labelled gauge kept a child per node: at 25,000 nodes, 23 MB of the controller's memory)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector


class PoolAlertMetric(Collector):
    def __init__(self, registry: CollectorRegistry) -> None:
        self._last: Mapping[str, int] = {}
        registry.register(self)

    def update(self, alerts: Mapping[str, int]) -> None:
        """The figures of a pass (kept as given: the pass never changes them after)."""
        self._last = alerts

    def collect(self) -> Iterator[Metric]:
        gauge = GaugeMetricFamily("mcc_pool_alert", "pool status alert", labels=["node"])
        for node, value in self._last.items():
            gauge.add_metric([node], value)
        yield gauge
