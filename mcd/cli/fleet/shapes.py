"""What ``mcd status --cluster`` reports, as data: each pool's row, each node's agent, the
alerts that would fire with their runbook sections, and the report that holds them
(:func:`mcd.cli.fleet.report.fleet_report` fills it; :mod:`mcd.cli.fleet.command` prints it)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

Obj = dict[str, Any]

RUNBOOK = "docs/runbook.md#"
ALERTS = {
    "MCDRebootError": "mcdrebooterror",
    "MCDPivotError": "mcdpivoterror",
    "KubeletHealthState": "kubelethealthstate",
    "MCCDrainError": "mccdrainerror",
    "MCCPoolAlert": "mccpoolalert",
    "MCDRolloutNoProgress": "mcdrolloutnoprogress",
    "MCDPoolRolloutHalted": "mcdpoolrollouthalted",
    "MCDPoolPaused": "mcdpoolpaused",
    "MCDHealthGateFailed": "mcdhealthgatefailed",
    "MCDNodeUpdateSlow": "mcdnodeupdateslow",
    "MCDRebootPending": "mcdrebootpending",
}
"""The shipped rules' alerts and their runbook sections (a test keeps them equal)."""
AGENT_RUNBOOK = "8-the-agent-itself"
NO_AGENT_ALERT = "(none in mcd's rules)"
"""The ALERTS row of a node whose agent is not running: no shipped rule covers it (the agent
exports the metrics the rules read, so its absence silences them); the row says so."""


@dataclass(frozen=True)
class Alert:
    name: str
    subject: str
    """``pool=worker`` or ``node=worker-0``."""
    why: str
    source: str = "objects"
    """``prometheus`` (firing there), ``objects`` (worked out from the cluster's objects) or
    ``possible`` (the objects cannot time it; Prometheus can)."""

    @property
    def runbook(self) -> str:
        if self.name == NO_AGENT_ALERT:
            return RUNBOOK + AGENT_RUNBOOK
        return RUNBOOK + ALERTS.get(self.name, "alerts-prometheus")


@dataclass(frozen=True)
class NodeAgent:
    """Whether a node's agent runs: a Running and Ready pod of the DaemonSet on the node, or
    (an agent outside pods) a node Lease its holder keeps renewing."""

    node: str
    running: bool
    reason: str = ""
    """Why not, in the kubelet's words (``ImagePullBackOff: Back-off pulling image ...``)."""
    pod: str = ""
    """``namespace/name`` of the agent's pod on the node, when there is one."""


@dataclass(frozen=True)
class PoolRow:
    name: str
    config: str
    target: str
    updated: str
    updating: str
    degraded: str
    machines: int
    ready: int
    updated_count: int
    degraded_count: int
    left: int
    stopped: str
    """Why no node gets the target ('' while it may go on): paused, node-degraded, invalid,
    rollout-halted, max-unavailable (every slot held by a node not updating), window."""
    agents: str = ""
    """``running/members`` agents (``-o wide``), '' when they could not be read."""
    notes: tuple[str, ...] = ()
    """Conditions not in their good state, and members not Done, one line each."""


@dataclass(frozen=True)
class FleetReport:
    available: bool
    progressing: bool
    degraded: bool
    message: str
    pools: tuple[PoolRow, ...]
    alerts: tuple[Alert, ...]
    next_step: str
    agents: tuple[NodeAgent, ...] | None = None
    """Every pool member's agent; None when the pods and Leases could not be read."""
    agents_unknown: str = ""
    """Why the agents could not be judged (the API server's answer), or ''."""
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        doc = asdict(self)
        doc["alerts"] = [{**asdict(a), "runbook": a.runbook} for a in self.alerts]
        doc.pop("extra")
        return doc
