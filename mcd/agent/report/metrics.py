"""The agent's Prometheus metrics, with the upstream names and labels (reference 4.1)."""

from __future__ import annotations

import time
from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics

disable_created_metrics()  # type: ignore[no-untyped-call]  # no *_created series: upstream's Go client has none


UPDATE_KINDS = ("rebootless", "drain", "reboot", "os")
"""``kind`` of an update: no drain, drained without a reboot, rebooted, the OS changed."""
DURATION_BUCKETS = (1, 5, 15, 30, 60, 120, 300, 600, 900, 1200, 1800, 2700, 3600, 7200, 14400)
GATE_RESULTS = ("pass", "fail")
TRY_RESULTS = ("confirmed", "reverted")


class Metrics:
    """One registry per agent (tests run several agents in one process)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.host_os = Gauge(
            "mcd_host_os_and_version", "os that MCD is running on and version if RHCOS",
            ["os", "version"], registry=r,
        )  # fmt: skip
        self.pivot_errors = Gauge(
            "mcd_pivot_errors_total", "Total number of errors encountered during OS update",
            registry=r,
        )  # fmt: skip
        self.state = Gauge(
            "mcd_state", "state of daemon on specified node", ["state", "reason"], registry=r
        )
        self.kubelet_state = Gauge(
            "mcd_kubelet_state", "Number of consecutive kubelet health check failures", registry=r
        )
        self.reboots_failed = Counter(
            "mcd_reboots_failed", "Total number of reboots that failed", registry=r
        )  # exported as mcd_reboots_failed_total
        self.update_state = Gauge(
            "mcd_update_state", "completed update config or error", ["config", "err"], registry=r
        )
        self.config_drift = Gauge(
            "mcd_config_drift", "timestamp of the last detected config drift, 0 when none",
            registry=r,
        )  # fmt: skip

        self.ssh_accesses = Counter(
            "ssh_accesses", "Total number of SSH access occurred.", registry=r
        )  # exported as ssh_accesses_total (upstream's name until the 2023 removal)

        self.health_gate_failures = Counter(
            "mcd_health_gate_failures", "Health gates that failed after an update, by check",
            ["check"], registry=r,
        )  # fmt: skip  # exported as mcd_health_gate_failures_total (mcd's own, not upstream's)
        self.health_gate_rollbacks = Counter(
            "mcd_health_gate_rollbacks", "Updates rolled back because their health gate failed",
            ["kind"], registry=r,
        )  # fmt: skip
        self.health_gate_failed = Gauge(
            "mcd_health_gate_failed",
            "1 when the node's last health gate failed (its update was rolled back)", registry=r,
        )  # fmt: skip

        # -- mcd's own (issue 33): how long updates take, what they wait for ---------------
        self.update_duration = Histogram(
            "mcd_update_duration_seconds",
            "Time from the start of an update (Working) to Done, the reboot included, by kind",
            ["kind"], buckets=DURATION_BUCKETS, registry=r,
        )  # fmt: skip
        self.update_last_duration = Gauge(
            "mcd_update_last_duration_seconds",
            "Duration of this node's last completed update, by kind (kept across restarts)",
            ["kind"], registry=r,
        )  # fmt: skip
        self.drain_duration = Histogram(
            "mcd_drain_duration_seconds", "Time the node's drains took, from request to drained",
            buckets=DURATION_BUCKETS, registry=r,
        )  # fmt: skip
        self.reboot_required = Gauge(
            "mcd_reboot_required",
            "1 while a committed config or the OS waits for a reboot of this node (kured's gauge)",
            registry=r,
        )  # fmt: skip
        self.health_gate_runs = Counter(
            "mcd_health_gate_runs", "Health gates run after an update, by result",
            ["result"], registry=r,
        )  # fmt: skip  # exported as mcd_health_gate_runs_total
        self.try_results = Counter(
            "mcd_try_results", "Updates on trial (try mode) that ended, by result",
            ["result"], registry=r,
        )  # fmt: skip  # exported as mcd_try_results_total
        self.try_pending = Gauge(
            "mcd_try_pending", "1 while an update is on trial and neither confirmed nor reverted",
            registry=r,
        )  # fmt: skip
        # upstream's getUnsupportedPackages (mcd/agent/report/startup.py)
        self.unsupported_packages = Gauge(
            "mcd_local_unsupported_packages",
            "Total number of locally layered unsupported packages installed on the node",
            ["node"], registry=r,
        )  # fmt: skip
        for kind in UPDATE_KINDS:  # every series from the start: rate() and the dashboard see 0s
            self.update_duration.labels(kind)
        for result in GATE_RESULTS:
            self.health_gate_runs.labels(result)
        for result in TRY_RESULTS:
            self.try_results.labels(result)

    def watch_node(self, reboot_owed: Callable[[], bool], on_trial: Callable[[], bool]) -> None:
        """Read at each scrape: a reboot owed in this boot, an update on trial."""
        self.reboot_required.set_function(lambda: 1.0 if reboot_owed() else 0.0)
        self.try_pending.set_function(lambda: 1.0 if on_trial() else 0.0)

    def update_finished(self, kind: str, seconds: float) -> None:
        self.update_duration.labels(kind).observe(seconds)
        self.last_update(kind, seconds)

    def last_update(self, kind: str, seconds: float) -> None:
        self.update_last_duration.clear()
        self.update_last_duration.labels(kind).set(seconds)

    def gate_verdict(self, ok: bool, failed_check: str = "") -> None:
        self.health_gate_failed.set(0 if ok else 1)
        self.health_gate_runs.labels("pass" if ok else "fail").inc()
        if failed_check:
            self.health_gate_failures.labels(failed_check).inc()

    def set_host_os(self, os_label: str, version: str) -> None:
        self.host_os.clear()
        self.host_os.labels(os_label, version).set(1)

    def set_state(self, state: str, reason: str = "") -> None:
        """Reset the vector, then set the one current state (as upstream)."""
        self.state.clear()
        self.state.labels(state, reason).set(time.time())

    def set_update_state(self, config: str, err: str = "") -> None:
        self.update_state.clear()
        self.update_state.labels(f"MachineConfig: {config}", err).set(time.time())

    def drift(self, detected: bool) -> None:
        self.config_drift.set(time.time() if detected else 0)
