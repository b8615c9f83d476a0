"""The options of ``mcd start`` (the agent of one node), as :class:`mcd.agent.daemon.Agent`
takes them."""

from __future__ import annotations

from dataclasses import dataclass

from mcd.cluster.nodelease import DEFAULT_DURATION
from mcd.host.checks.kubelet import DEFAULT_ENDPOINT
from mcd.model.reboots.requests import DEFAULT_SENTINEL


@dataclass
class Options:
    node_name: str
    root_mount: str = "/rootfs"
    kubeconfig: str | None = None
    drain_mode: str = "controller"
    metrics_url: str = "127.0.0.1:8797"
    kubelet_healthz_enabled: bool = True
    kubelet_healthz_endpoint: str = DEFAULT_ENDPOINT
    kubelet_interval: float = 30.0
    login_monitor: bool = True
    drain_timeout: float = 3600.0
    min_backoff: float = 1.0
    max_backoff: float = 60.0
    resync_interval: float = 300.0
    lease_duration: int = DEFAULT_DURATION
    reboot_sentinel: str = DEFAULT_SENTINEL
    reboot_sentinel_command: str = ""
    reboot_check_period: float = 60.0
