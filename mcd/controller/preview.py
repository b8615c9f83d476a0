"""``mcd plan --pool``: what a pool's rollout would do, node by node, before it starts.

Renders the pool's MachineConfigs as the controller would (so a MachineConfig change shows
before the controller has acted on it), then plans each node's move from its current
config with :func:`mcd.model.planning.plan.make_plan`: cost, drain, reboot, and the order and batch
(``maxUnavailable`` at a time, upstream's node order) it would go in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from mcd.controller.osreboots.preview import RebootRow, reboot_rows
from mcd.model.disruption.policy import DEFAULT_POLICIES, DisruptionPolicies
from mcd.model.errors import ConfigError
from mcd.model.holds.gates import HELD as GATE_HELD
from mcd.model.holds.gates import GateError, parse_gates
from mcd.model.machineconfig import machine_config_from_object
from mcd.model.planning.applicability import HostSupport, host_support_of
from mcd.model.planning.plan import UpdatePlan, make_plan
from mcd.model.pool.canary import (
    CANARY,
    HALT_ANNOTATION,
    HALTED,
    POLICY_ANNOTATION,
    PolicyError,
    parse_policy,
)
from mcd.model.pool.pools import (
    NodeView,
    SelectorError,
    labels_of,
    max_unavailable,
    name_of,
    nodes_for_pool,
    primary_pool,
    selector_matches,
    target_of,
    upstream_order,
)
from mcd.model.pool.render import RenderError, render
from mcd.model.pool.rollout import MAINTENANCE_WINDOW
from mcd.model.pool.windows import WINDOW_ANNOTATION, WindowState

Obj = dict[str, Any]


@dataclass(frozen=True)
class NodeRow:
    name: str
    current: str
    action: str  # "update", "none" (already on the target), "updating"
    cost: str
    drain: bool
    reboot: bool
    batch: int  # 0 when nothing to do
    reason: str = ""

    def to_json(self) -> dict[str, object]:
        return {
            "node": self.name,
            "current": self.current,
            "action": self.action,
            "cost": self.cost,
            "drain": self.drain,
            "reboot": self.reboot,
            "batch": self.batch,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class PoolPreview:
    pool: str
    target: str
    target_exists: bool
    rolling_out: str
    max_unavailable: int
    paused: bool
    window: str
    nodes: tuple[NodeRow, ...]
    render_error: str = ""
    rollout_policy: Mapping[str, str] | None = None
    """:func:`policy_summary`: the rollout policy, the canary's state, a halt and what
    resumes it."""
    policy_source: str = DEFAULT_POLICIES.source
    """Where the node disruption policies the costs were planned with came from."""
    os_reboots: tuple[str, tuple[RebootRow, ...]] = ("", ())
    """The OS reboot policy in words, and each node's OS reboot
    (:mod:`mcd.controller.osreboots`)."""

    def to_json(self) -> dict[str, object]:
        return {
            "pool": self.pool,
            "target": self.target,
            "targetExists": self.target_exists,
            "rollingOut": self.rolling_out,
            "maxUnavailable": self.max_unavailable,
            "paused": self.paused,
            "maintenanceWindow": self.window,
            "renderError": self.render_error,
            "rolloutPolicy": dict(self.rollout_policy or {}),
            "policySource": self.policy_source,
            "nodes": [n.to_json() for n in self.nodes],
            "osReboots": {
                "policy": self.os_reboots[0],
                "nodes": [r.to_json() for r in self.os_reboots[1]],
            },
        }


def preview_pool(
    pool: Obj,
    pools: Sequence[Obj],
    configs: Mapping[str, Obj],
    nodes: Sequence[Obj],
    window: WindowState | None = None,
    base: tuple[str, str] = ("", ""),
    policies: DisruptionPolicies = DEFAULT_POLICIES,
) -> PoolPreview:
    """``base``: the ControllerConfig's base OS and extensions images
    (:func:`mcd.cluster.controllerconfig.base_images`), as the controller's render uses them;
    ``policies``: the node disruption policies the agents will use (the cluster's)."""
    name = name_of(pool)
    spec = pool.get("spec") or {}
    selector = spec.get("machineConfigSelector")
    selected = [mc for mc in configs.values() if selector_matches(selector, labels_of(mc))]
    target, target_spec, error = target_of(pool), None, ""
    try:
        rendered = render(name, selected, base)
        target, target_spec = (
            rendered.name,
            {"metadata": {"name": rendered.name}, "spec": rendered.spec},
        )
    except RenderError as e:
        error = str(e)
        if target in configs:
            target_spec = configs[target]
    members = {name_of(n): n for n in nodes_for_pool(pool, pools, nodes)}
    views = [NodeView.of(n) for n in members.values()]
    limit = max_unavailable(spec.get("maxUnavailable"), len(views))
    pending = upstream_order([v for v in views if v.desired != target or not v.done])
    batch_of = {v.name: i // limit + 1 for i, v in enumerate(pending)}
    rows = []
    hosts = {name_of(n): host_support_of(n) for n in nodes}  # what each node can apply
    for v in sorted(views, key=lambda v: (batch_of.get(v.name, 0) or 10**9, v.name)):
        rows.append(
            _row(v, target, target_spec, configs, batch_of.get(v.name, 0), hosts.get(v.name),
                 policies)
        )  # fmt: skip
    return PoolPreview(
        pool=name,
        target=target,
        target_exists=target in configs,
        rolling_out=target_of(pool),
        max_unavailable=limit,
        paused=bool(spec.get("paused")),
        window=_window_text(pool, window),
        nodes=tuple(rows),
        render_error=error,
        rollout_policy=policy_summary(pool),
        policy_source=policies.source,
        os_reboots=reboot_rows(pool, views, members, datetime.now(UTC), window),
    )


def _row(
    v: NodeView,
    target: str,
    target_doc: Obj | None,
    configs: Mapping[str, Obj],
    batch: int,
    host: HostSupport | None = None,
    policies: DisruptionPolicies = DEFAULT_POLICIES,
) -> NodeRow:
    if v.done and v.current == target:
        return NodeRow(v.name, v.current, "none", "none", False, False, 0)
    if v.desired == target and not v.done:
        return NodeRow(v.name, v.current, "updating", "-", False, False, batch)
    plan = _plan(configs.get(v.current), target_doc, host, policies)
    if isinstance(plan, str):
        return NodeRow(v.name, v.current or "-", "update", "unknown", True, True, batch, plan)
    if not plan.reconcilable:
        return NodeRow(v.name, v.current, "unreconcilable", "-", False, False, 0, plan.reason)
    return NodeRow(v.name, v.current, "update", plan.cost.label, plan.drain, plan.reboot, batch)


def _plan(
    old: Obj | None,
    new: Obj | None,
    host: HostSupport | None = None,
    policies: DisruptionPolicies = DEFAULT_POLICIES,
) -> UpdatePlan | str:
    if old is None:
        return "current config not found; assuming a drain and a reboot"
    if new is None:
        return "target config not found"
    try:
        return make_plan(
            machine_config_from_object(old, name_of(old)),
            machine_config_from_object(new, name_of(new)),
            policies,
            host=host,
        )
    except ConfigError as e:
        return str(e)


def _window_text(pool: Obj, window: WindowState | None) -> str:
    if ((pool.get("metadata") or {}).get("annotations") or {}).get(WINDOW_ANNOTATION) is None:
        return "none"
    return window.describe() if window is not None else "invalid"


def describe_preview(p: PoolPreview, now: datetime | None = None) -> str:
    lines = [
        f"Pool {p.pool}: {len(p.nodes)} nodes, maxUnavailable {p.max_unavailable}, "
        f"paused: {'yes' if p.paused else 'no'}"
    ]
    if p.render_error:
        lines.append(f"Render error: {p.render_error}")
    state = "exists" if p.target_exists else "not created yet"
    lines.append(f"Target: {p.target or '-'} ({state})")
    if p.rolling_out and p.rolling_out != p.target:
        lines.append(f"Rolling out now: {p.rolling_out}")
    lines.append(f"Maintenance window: {p.window}")
    lines.append(f"Policies: {p.policy_source}")
    lines += describe_policy(p.rollout_policy or {}, False)
    header = ("NODE", "CURRENT", "ACTION", "COST", "DRAIN", "REBOOT", "BATCH")
    table = [header] + [
        (
            n.name,
            n.current or "-",
            n.action,
            n.cost,
            "yes" if n.drain else "no",
            "yes" if n.reboot else "no",
            str(n.batch) if n.batch else "-",
        )
        for n in p.nodes
    ]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    for r in table:
        lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    for n in p.nodes:
        if n.reason:
            lines.append(f"{n.name}: {n.reason}")
    if p.os_reboots[0]:
        lines.append(f"OS reboots: {p.os_reboots[0]}")
    lines += [r.line() for r in p.os_reboots[1]]
    return "\n".join(lines) + "\n"


def node_pool_summary(node: Obj, pools: Sequence[Obj]) -> dict[str, str]:
    """For ``mcd status``: the node's pool, whether it is paused, and its maintenance window."""
    try:
        found = primary_pool(node, pools)
    except SelectorError as e:
        return {"pool": "", "error": str(e)}
    if found is None:
        return {"pool": ""}
    conditions = (found.get("status") or {}).get("conditions") or []
    window = next((c for c in conditions if c.get("type") == MAINTENANCE_WINDOW), None)
    summary = {
        "pool": name_of(found),
        "paused": "yes" if (found.get("spec") or {}).get("paused") else "no",
        "target": target_of(found),
    }
    if window is not None:
        summary["maintenanceWindow"] = str(window.get("message") or window.get("reason") or "")
    return {**summary, **policy_summary(found)}


def describe_pool_summary(summary: Mapping[str, str]) -> list[str]:
    if summary.get("error"):
        return [f"Pool:            none ({summary['error']})"]
    if not summary.get("pool"):
        return ["Pool:            none"]
    lines = [
        f"Pool:            {summary['pool']} (target {summary.get('target') or '-'}, "
        f"paused {summary.get('paused', 'no')})"
    ]
    if "maintenanceWindow" in summary:
        lines.append(f"Window:          {summary['maintenanceWindow']}")
    return lines + describe_policy(summary, True)


def policy_summary(pool: Mapping[str, Any]) -> dict[str, str]:
    """The pool's rollout policy (``rolloutPolicy``), its gates (``gates``), its canary's state
    (``canary``), while halted, why and what resumes it (``halted``), and what a gate holds
    (``held``); empty without a policy or a halt."""
    annotations = (pool.get("metadata") or {}).get("annotations") or {}
    conditions = (pool.get("status") or {}).get("conditions") or []
    out: dict[str, str] = {}
    text = annotations.get(POLICY_ANNOTATION)
    if text is not None:
        try:
            out["rolloutPolicy"] = parse_policy(str(text)).describe()
        except PolicyError as e:
            out["rolloutPolicy"] = f"invalid: {e}"
        try:
            gates = parse_gates(str(text))
            if gates is not None:
                out["gates"] = gates.describe()
        except GateError as e:
            out["gates"] = f"invalid: {e}; the pool is held until it is fixed"
    canary = next((c for c in conditions if c.get("type") == CANARY), None)
    if canary is not None:
        out["canary"] = str(canary.get("message") or "")
    halted = next((c for c in conditions if c.get("type") == HALTED), None)
    if halted is not None and halted.get("status") == "True":
        out["halted"] = str(halted.get("message") or "")
    elif annotations.get(HALT_ANNOTATION) == target_of(pool) and target_of(pool):
        name = name_of(pool)
        out["halted"] = (
            f"rollout of {target_of(pool)} halted; to resume: kubectl annotate "
            f"machineconfigpool {name} {HALT_ANNOTATION}-"
        )
    held = next((c for c in conditions if c.get("type") == GATE_HELD), None)
    if held is not None and held.get("status") == "True":
        out["held"] = f"{held.get('reason')}: {held.get('message') or ''}"
    return out


def describe_policy(summary: Mapping[str, str], aligned: bool) -> list[str]:
    """The lines of :func:`policy_summary` (``aligned``: in ``mcd status``'s column)."""
    lines = []
    for key, label in (("rolloutPolicy", "Rollout policy"), ("gates", "Gates"),
                       ("canary", "Canary"), ("halted", "Halted"), ("held", "Held")):  # fmt: skip
        if summary.get(key):
            head = f"{label}:"
            lines.append(f"{head:<17}{summary[key]}" if aligned else f"{head} {summary[key]}")
    return lines
