"""What ``mcd status --cluster`` says, as a pure function of the pools and Nodes (and of
Prometheus' firing alerts when it is asked): each pool's row, the alerts that would fire, and
the next step.

Without Prometheus the alerts are worked out from the objects alone, with the controller's own
rollout decision (:func:`mcd.model.pool.rollout.plan_rollout`) for a halted or paused pool;
what the objects cannot time (a rollout with no progress for 30 minutes) is marked
``possible``. The next step is the most urgent candidate: a halted pool's failing node, a
failed reboot, a render error, a failed health gate, a blocked drain, a paused pool, the node
a rollout waits on.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from mcd.cli.fleet.shapes import (
    AGENT_RUNBOOK,
    ALERTS,
    NO_AGENT_ALERT,
    RUNBOOK,
    Alert,
    FleetReport,
    NodeAgent,
    PoolRow,
)
from mcd.controller.osreboots.preview import reboot_rows
from mcd.model.drain.report import DRAIN_BLOCKED
from mcd.model.drain.settings import drain_settings
from mcd.model.holds.gates import BLOCKING_PODS, HELD
from mcd.model.node.health import STATE_ANNOTATION
from mcd.model.pool.canary import HALT_ANNOTATION, HALTED
from mcd.model.pool.pools import NodeView, name_of, nodes_for_pool, target_of
from mcd.model.pool.rollout import (
    DEGRADED,
    INVALID,
    MAINTENANCE_WINDOW,
    NO_CAPACITY,
    NODE_FAILING,
    PAUSED,
    RENDER_DEGRADED,
    UPDATED,
    UPDATING,
    condition,
    plan_rollout,
)
from mcd.model.text import printable
from mcd.model.vocabulary import NodeState

Obj = dict[str, Any]

NO_PROGRESS_SECONDS = 1800
REBOOT_FAILED = ("reboot command failed", "Failed to reboot?")
REASON_WIDTH = 160
HELD_RUNBOOK = "gates-blocking-pods-and-prometheus-alerts-rolloutheld"


def _status(pool: Obj, kind: str) -> str:
    found = condition((pool.get("status") or {}).get("conditions") or [], kind)
    return str(found.get("status", "")) if found else ""


def _since(pool: Obj, kind: str, now: datetime) -> float | None:
    found = condition((pool.get("status") or {}).get("conditions") or [], kind)
    stamp = str((found or {}).get("lastTransitionTime") or "")
    try:
        when = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return None
    return (now - when).total_seconds()


def _short(text: str) -> str:
    text = printable(text)
    return text if len(text) <= REASON_WIDTH else text[: REASON_WIDTH - 3] + "..."


def _pool(
    pool: Obj,
    pools: Sequence[Obj],
    nodes: Sequence[Obj],
    now: datetime,
    agents: Mapping[str, NodeAgent] | None = None,
) -> tuple[PoolRow, list[Alert], list[tuple[int, str]]]:
    """One pool's row, its alerts, and its candidate next steps (priority, text)."""
    name = name_of(pool)
    status = pool.get("status") or {}
    members = nodes_for_pool(pool, pools, nodes)
    views = [NodeView.of(n) for n in members]
    target = target_of(pool)
    rollout = plan_rollout(pool, views)
    machines = int(status.get("machineCount") or 0)
    updated_count = int(status.get("updatedMachineCount") or 0)
    left = max(0, machines - updated_count)
    stopped = {PAUSED: "paused", NODE_FAILING: "node-degraded", INVALID: "invalid"}.get(
        rollout.blocked, ""
    )
    stuck = _stuck(views) if rollout.blocked == NO_CAPACITY else []
    if stuck:  # every slot held by a node that is not updating: nothing moves by itself
        stopped = "max-unavailable"
    elif left and _window_closed(pool):
        stopped = "window"
    gated = condition(status.get("conditions") or [], HELD)  # a gate of the rollout policy
    gated = gated if gated and gated.get("status") == "True" else None
    if gated and not stopped and gated.get("reason") != BLOCKING_PODS:  # those: the next goes
        stopped = "held"
    alerts: list[Alert] = []
    steps: list[tuple[int, str]] = []
    notes: list[str] = []
    # Degraded and NodeDegraded repeat the nodes' reasons, which the node lines below give
    for kind in (UPDATING, RENDER_DEGRADED, DRAIN_BLOCKED, HELD):
        found = condition(status.get("conditions") or [], kind)
        if found and found.get("status") == "True" and found.get("message"):
            notes.append(f"{kind}: {_short(str(found['message']))}")
    if gated:
        steps.append((45, f"kubectl describe mcp {name}   (RolloutHeld: {gated.get('reason')}; "
                          f"{RUNBOOK}{HELD_RUNBOOK})"))  # fmt: skip
    for view in views:
        agent = agents.get(view.name) if agents is not None else None
        if agent is not None and not agent.running:
            # what the annotations say was written by an agent that no longer runs
            notes.append(f"node {view.name}: agent not running: {_short(agent.reason)}")
            why = f"agent not running ({_short(agent.reason)})"
            alerts.append(
                Alert(NO_AGENT_ALERT, f"node={view.name}",
                      f"{why}; no shipped alert covers a node without its agent")
            )  # fmt: skip
            namespace, _, pod = agent.pod.partition("/")
            look = (
                f"kubectl -n {namespace} describe pod {pod}"
                if agent.pod
                else f"kubectl get lease -A --field-selector metadata.name={view.name}"
            )
            steps.append((5, f"{look}   (the agent on {view.name} is not running: "
                             f"{_short(agent.reason)}; {RUNBOOK}{AGENT_RUNBOOK})"))  # fmt: skip
        if view.state in ("", NodeState.DONE) and view.current == view.desired:
            continue
        why = f": {_short(view.reason)}" if view.reason else ""
        wants = f" (desired {view.desired})" if view.desired != view.current else ""
        notes.append(f"node {view.name}: {view.state or NodeState.DONE}{wants}{why}")
    by_name = {name_of(n): n for n in members}  # each node's OS reboot and why it waits
    notes += [f"node {r.line()}" for r in reboot_rows(pool, views, by_name, now)[1]]
    halted = condition(status.get("conditions") or [], HALTED)
    if halted and halted.get("status") == "True":  # the pool's rollout policy halted it
        stopped = "rollout-halted"
        notes.append(f"{HALTED}: {_short(str(halted.get('message') or ''))}")
        alerts.append(Alert("MCDPoolRolloutHalted", f"pool={name}",
                            f"the rollout policy halted {target}"))  # fmt: skip
        steps.append((10, f"kubectl describe mcp {name}   (RolloutHalted names the nodes and "
                          f"why; when fixed: kubectl annotate mcp {name} {HALT_ANNOTATION}-; "
                          f"{RUNBOOK}mcdpoolrollouthalted)"))  # fmt: skip
    elif rollout.blocked == NODE_FAILING:
        failing = ", ".join(rollout.failing)
        alerts.append(
            Alert(
                "MCDPoolRolloutHalted",
                f"pool={name}",
                f"{failing} failed {target}; no further node gets it",
            )
        )
        steps.append(
            (
                10,
                f"mcd status --node {rollout.failing[0]}   (pool {name} is halted: "
                f"{rollout.failing[0]} failed {target}; {RUNBOOK}mcdpoolrollouthalted)",
            )
        )
    elif stuck:
        held = ", ".join(f"{v.name} ({why})" for v, why in stuck[:5])
        notes.append(f"no free slot: maxUnavailable is taken by {held}, none of them updating")
        first = stuck[0][0]
        fix = f"kubectl uncordon {first.name}" if first.unschedulable and not first.degraded else (
            f"mcd status --node {first.name}")  # fmt: skip
        why = f"no node gets {target} while {first.name} holds a maxUnavailable slot"
        steps.append((25, f"{fix}   (pool {name}: {why}; {RUNBOOK}13-pools-and-mcd-controller)"))
    elif rollout.blocked == INVALID:
        alerts.append(Alert("MCDPoolRolloutHalted", f"pool={name}", rollout.error))
        steps.append((10, f"kubectl edit mcp {name}   (spec.maxUnavailable: {rollout.error})"))
    elif rollout.blocked == PAUSED and left:
        alerts.append(
            Alert("MCDPoolPaused", f"pool={name}", f"paused with {left} nodes not on {target}")
        )
        unpause = '\'{"spec":{"paused":false}}\''
        steps.append(
            (
                60,
                f"kubectl patch mcp {name} --type merge -p {unpause}"
                f"   (when the pause is over; {RUNBOOK}mcdpoolpaused)",
            )
        )
    elif left and _status(pool, UPDATING) == "True":
        since = _since(pool, UPDATING, now)
        if since is not None and since > NO_PROGRESS_SECONDS:
            alerts.append(
                Alert(
                    "MCDRolloutNoProgress",
                    f"pool={name}",
                    f"Updating for {since / 60:.0f}m with {left} nodes left",
                    "possible",
                )
            )
        busy = [v.name for v in views if v.state == NodeState.WORKING]
        watch = f"mcd status --node {busy[0]}" if busy else f"kubectl get mcp {name} -w"
        steps.append((70, f"{watch}   (pool {name}: {left} of {machines} nodes left)"))
    if _status(pool, RENDER_DEGRADED) == "True":
        steps.append(
            (
                20,
                f"kubectl describe mcp {name}   (RenderDegraded; "
                f"{RUNBOOK}13-pools-and-mcd-controller)",
            )
        )
    blocked_for = _since(pool, DRAIN_BLOCKED, now)
    if _status(pool, DRAIN_BLOCKED) == "True":
        timeout = drain_settings((pool.get("metadata") or {}).get("annotations") or {}).timeout
        if blocked_for is not None and blocked_for > timeout:
            alerts.append(
                Alert(
                    "MCCDrainError", f"pool={name}", f"a drain blocked for {blocked_for / 60:.0f}m"
                )
            )
        steps.append(
            (
                40,
                f"kubectl describe mcp {name}   (DrainBlocked: the pods and budgets; "
                f"{RUNBOOK}4-drain)",
            )
        )
    for node, view in zip(members, views, strict=True):
        if view.reason.startswith(REBOOT_FAILED[0]) or REBOOT_FAILED[1] in view.reason:
            alerts.append(Alert("MCDRebootError", f"node={view.name}", _short(view.reason)))
            steps.append(
                (15, f"mcd status --node {view.name}   (reboot failed; {RUNBOOK}mcdrebooterror)")
            )
        gate = _gate(node)  # a failure of a config the node is no longer given is over
        if gate.get("result") == "failed" and gate.get("config") == view.desired:
            check = gate.get("check", "")
            alerts.append(
                Alert(
                    "MCDHealthGateFailed",
                    f"node={view.name}",
                    f"check {check} failed after the update to {gate.get('config')}",
                )
            )
            steps.append(
                (
                    30,
                    f"mcd status --node {view.name}   (health gate failed; "
                    f"{RUNBOOK}mcdhealthgatefailed)",
                )
            )
    row = PoolRow(
        name=name,
        config=str((status.get("configuration") or {}).get("name") or ""),
        target=target,
        updated=_status(pool, UPDATED),
        updating=_status(pool, UPDATING),
        degraded=_status(pool, DEGRADED),
        machines=machines,
        ready=int(status.get("readyMachineCount") or 0),
        updated_count=updated_count,
        degraded_count=int(status.get("degradedMachineCount") or 0),
        left=left,
        stopped=stopped,
        agents=""
        if agents is None
        else f"{sum(1 for v in views if v.name in agents and agents[v.name].running)}/{len(views)}",
        notes=tuple(notes),
    )
    return row, alerts, steps


def _stuck(views: Sequence[NodeView]) -> list[tuple[NodeView, str]]:
    """The unavailable nodes holding a pool's slots, each with why, when none of them is
    updating (empty otherwise: a rollout waiting for a node that updates is moving)."""
    held = [v for v in views if v.unavailable]
    if any(v.state == NodeState.WORKING or (v.ready and not v.degraded and
           v.current != v.desired) for v in held):  # fmt: skip
        return []  # updating, or told a target its agent is about to start
    out = []
    for v in held:
        why = v.state if v.degraded else "NotReady" if not v.ready else (
            "cordoned" if v.unschedulable else "not updating")  # fmt: skip
        out.append((v, why))
    return out


def _window_closed(pool: Obj) -> bool:
    found = condition((pool.get("status") or {}).get("conditions") or [], MAINTENANCE_WINDOW)
    return found is not None and found.get("status") == "False"


def _gate(node: Mapping[str, Any]) -> dict[str, str]:
    text = ((node.get("metadata") or {}).get("annotations") or {}).get(STATE_ANNOTATION)
    try:
        doc = json.loads(text) if text else {}
    except ValueError:
        return {}
    return {str(k): str(v) for k, v in doc.items()} if isinstance(doc, dict) else {}


def fleet_report(
    pools: Sequence[Obj],
    nodes: Sequence[Obj],
    now: datetime,
    firing: Sequence[Mapping[str, Any]] | None = None,
    agents: Sequence[NodeAgent] | None = None,
) -> FleetReport:
    """The screen's content. ``firing``: Prometheus' firing alerts (``/api/v1/alerts``), which
    replace the alerts worked out from the objects (but the rows of nodes without a running
    agent: no rule fires for those). ``agents``: whether each node's agent runs (None: unknown,
    nothing said about them)."""
    by_node = None if agents is None else {a.node: a for a in agents}
    rows, alerts, steps = [], [], []
    for pool in sorted(pools, key=name_of):
        row, found, candidates = _pool(pool, pools, nodes, now, by_node)
        rows.append(row)
        alerts.extend(found)
        steps.extend(candidates)
    alerts = list({(a.name, a.subject): a for a in alerts}.values())  # a node in two pools
    if firing is not None:
        alerts = [
            *(_from_prometheus(a) for a in firing if a["labels"].get("alertname") in ALERTS),
            *(a for a in alerts if a.name == NO_AGENT_ALERT),
        ]
    progressing = any(r.updating == "True" or r.left for r in rows)
    degraded = any(r.degraded == "True" for r in rows)
    if not rows:
        message = "no MachineConfigPools: nothing to roll out"
    elif progressing:
        moving = [f"{r.name} {r.left} of {r.machines} nodes left" for r in rows if r.left]
        message = "Working towards the pools' targets: " + ", ".join(moving or ["pools updating"])
    else:
        message = "All pools are on their target configs"
    if degraded:
        message += "; degraded: " + ", ".join(r.name for r in rows if r.degraded == "True")
    members = {name_of(n) for p in pools for n in nodes_for_pool(p, pools, nodes)}
    down = sorted(a.node for a in agents or () if not a.running and a.node in members)
    if down and rows:
        message += "; agent not running on " + ", ".join(down)
    if steps:
        next_step = min(steps)[1]
    elif alerts:
        next_step = f"see {alerts[0].runbook}"
    else:
        next_step = "nothing to do: every pool is on its target config"
    return FleetReport(
        bool(rows),
        progressing,
        degraded,
        message,
        tuple(rows),
        tuple(alerts),
        next_step,
        None if agents is None else tuple(sorted(agents, key=lambda a: a.node)),
    )


def _from_prometheus(alert: Mapping[str, Any]) -> Alert:
    labels = alert["labels"]
    subject = " ".join(f"{k}={labels[k]}" for k in ("pool", "node", "reason") if k in labels)
    summary = str((alert.get("annotations") or {}).get("description") or "")
    return Alert(str(labels["alertname"]), subject, _short(summary), "prometheus")
