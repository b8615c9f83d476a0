"""The controller's metrics, served by the listener it shares with the agent
(:mod:`mcd.host.statusserver`: ``/metrics``, ``/healthz``, ``/readyz``).

Metric names follow upstream's machine-config-controller where it has one
(``mcc_pool_alert``, ``os_image_url_override``, ``mcc_drain_err``, the ``mco_*`` counts); the
rest are mcd's own (``mcd_controller_*``, ``mcd_pool_*``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
)

from mcd.controller.metrics import RolloutMetrics

log = logging.getLogger(__name__)

Probe = Callable[[], str]

POOL_STATES = ("machine", "updated", "ready", "unavailable", "degraded")


class ControllerMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.leader = Gauge(
            "mcd_controller_leader",
            "1 while this replica holds the controller Lease",
            registry=self.registry,
        )
        self.syncs = Counter(
            "mcd_controller_syncs", "Passes over all pools", registry=self.registry
        )
        self.node_updates = Counter(
            "mcd_controller_node_updates",
            "desiredConfig writes, by pool",
            ["pool"],
            registry=self.registry,
        )
        self.machines = Gauge(
            "mcd_controller_pool_machines",
            "Machines of a pool by state (status counts)",
            ["pool", "state"],
            registry=self.registry,
        )
        self.drain_err = Gauge(
            "mcc_drain_err",
            "1 while a node's drain has been failing for longer than its pool's drain timeout",
            ["node"],
            registry=self.registry,
        )
        self.os_image_override = Gauge(
            "os_image_url_override", "state of OS image override", ["pool"], registry=self.registry
        )
        """Upstream's (render controller): 1 while the pool's rendered config sets an
        ``osImageURL`` other than the ControllerConfig's base image, else 0."""
        self.rollout = RolloutMetrics(self.registry)
        """Per-pool rollout series (``mco_*`` counts, progress): :mod:`mcd.controller.metrics`."""

    def clear_drain_err(self, node: str) -> None:
        """The node's drain completed: its series goes (as upstream's DeleteLabelValues)."""
        try:
            self.drain_err.remove(node)
        except KeyError:
            return
        log.info("Cleaning up MCCDrain error for node(%s) as drain was completed", node)

    def os_image_url_override(self, pool: str, overridden: bool) -> None:
        self.os_image_override.labels(pool).set(1 if overridden else 0)

    def pool_status(self, pool: str, status: dict[str, object]) -> None:
        for state in POOL_STATES:
            value = status.get(f"{state}MachineCount", 0)
            self.machines.labels(pool, state).set(float(value) if isinstance(value, int) else 0)
