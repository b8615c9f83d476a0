"""What one agent works with (:class:`Context`), the config documents an update moves between,
the errors that end a sync, and the two things every part of an update asks of the context:
the cluster's disruption policies and the drift monitor's (re)start."""

from __future__ import annotations

from dataclasses import dataclass, field

from mcd.agent.report.drift import DriftMonitor
from mcd.agent.report.metrics import Metrics
from mcd.agent.report.rebootwish import RebootWish
from mcd.agent.report.status import NodeStatus
from mcd.agent.safety.guard import SigtermGuard
from mcd.agent.update.handles import Node
from mcd.cluster.api import Kube
from mcd.cluster.drain import Drainer
from mcd.cluster.events import EventRecorder, Reason
from mcd.cluster.mcn import MachineConfigNodeReporter
from mcd.cluster.node import NodeWriter
from mcd.cluster.policies import PoliciesNotReady, cluster_rules
from mcd.model.disruption.policy import DisruptionPolicies
from mcd.model.errors import PolicyError
from mcd.model.machineconfig import MachineConfig
from mcd.model.planning.reconcile import Overrides

AGENT_LOCK_WAIT = 60.0
"""Seconds an update waits for another writer (``mcd restore``, ``once-from``) to finish."""


class SyncError(Exception):
    """A sync failed; the message is the node's ``reason`` (state ``Degraded``)."""


class Unreconcilable(SyncError):
    """The desired config cannot be applied on a live node (state ``Unreconcilable``)."""


class Retarget(Exception):
    """The update was given up before anything was written because its target changed
    (``desiredConfig``, or the MachineConfig replaced); the next sync plans afresh."""


class MissingConfig(SyncError):
    def __init__(self, name: str, message: str) -> None:
        super().__init__(message)
        self.name = name


@dataclass(frozen=True)
class Config:
    mc: MachineConfig
    document: bytes
    identity: tuple[str, str] = ("", "")
    """The MachineConfig's (uid, resourceVersion) when fetched from the API server."""

    @property
    def name(self) -> str:
        return self.mc.name


@dataclass
class Context:
    """Everything one agent works with."""

    node_name: str
    host: Node
    kube: Kube
    writer: NodeWriter
    events: EventRecorder
    drainer: Drainer
    status: NodeStatus
    metrics: Metrics
    drift: DriftMonitor
    guard: SigtermGuard
    reboot_queued: bool = False
    updates: int = field(default=0)
    mcn: MachineConfigNodeReporter | None = None
    """The node's MachineConfigNode (made on first report)."""
    wish: RebootWish | None = None
    """What the node's OS asks for: a reboot (:mod:`mcd.agent.boot.osreboot`)."""


def disruption_policies(ctx: Context) -> DisruptionPolicies:
    """The cluster's node disruption policies (MachineConfiguration/cluster, else defaults)."""
    return update_rules(ctx)[0]


def update_rules(ctx: Context) -> tuple[DisruptionPolicies, Overrides]:
    """The cluster's node disruption policies and irreconcilable overrides, from one read of
    MachineConfiguration/cluster (else the defaults and none)."""
    try:
        return cluster_rules(ctx.kube)
    except PoliciesNotReady as e:
        raise SyncError(str(e)) from e
    except PolicyError as e:
        raise SyncError(f"invalid MachineConfiguration/cluster: {e}") from e


def start_drift_monitor(ctx: Context, mc: MachineConfig, degraded_reason: str = "") -> None:
    drift = degraded_reason if _is_drift(degraded_reason) else ""
    ctx.metrics.drift(bool(drift))
    if ctx.drift.running and ctx.drift.config_name == mc.name:
        return
    if not ctx.drift.start(mc, drifted=drift):
        return
    message = f"Config Drift Monitor started, watching against {mc.name}"
    ctx.events.record(Reason.CONFIG_DRIFT_MONITOR_STARTED, message)


def _is_drift(reason: str) -> bool:
    return "content mismatch" in reason or "mode mismatch" in reason
