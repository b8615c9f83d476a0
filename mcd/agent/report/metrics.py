"""The agent's Prometheus metrics, with the upstream names and labels (reference 4.1)."""

from __future__ import annotations

import time

from prometheus_client import CollectorRegistry, Counter, Gauge, disable_created_metrics

disable_created_metrics()  # type: ignore[no-untyped-call]  # no *_created series: upstream's Go client has none


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
            "mcd_health_gate_failed", "1 when the last health gate this agent ran failed",
            registry=r,
        )  # fmt: skip

        # issue 32: upstream's getUnsupportedPackages (mcd/agent/report/startup.py)
        self.unsupported_packages = Gauge(
            "mcd_local_unsupported_packages",
            "Total number of locally layered unsupported packages installed on the node",
            ["node"], registry=r,
        )  # fmt: skip

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
