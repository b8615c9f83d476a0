"""``mcd status``: one node's state as the agent sees it, for people and scripts.

Current and desired config, state and reason, the drain state, what the next
update will do and cost (the plan of current -> desired), and the node's last
Events. Read-only: GETs only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mcd.cluster.api import ApiError, Kube, Obj
from mcd.cluster.configs import MachineConfigNotFound, get_machine_config
from mcd.cluster.drain import cordoned_by
from mcd.cluster.events import default_namespace
from mcd.cluster.node import annotations_of, node_path
from mcd.cluster.policies import PoliciesNotReady, cluster_policies, irreconcilable_overrides
from mcd.model.errors import ConfigError
from mcd.model.machineconfig import MachineConfig, empty_machine_config, load_machine_config
from mcd.model.node.health import STATE_ANNOTATION, describe_state
from mcd.model.planning.applicability import HOST_SUPPORT_ANNOTATION, support_from_annotation
from mcd.model.planning.plan import UpdatePlan, make_plan
from mcd.model.planning.rebootkind import SOFT_REBOOT_ANNOTATION, soft_reboot_allowed
from mcd.model.text import printable
from mcd.model.vocabulary import EMPTY_CONFIG_NAME, SSH_ACCESSED, Annotation, NodeState


@dataclass
class NodeReport:
    node: str
    state: str
    reason: str
    current: str
    desired: str
    unschedulable: bool
    drain: dict[str, str]
    plan: dict[str, Any] | None
    plan_error: str = ""
    events: list[dict[str, str]] = field(default_factory=list)
    ssh: str = ""
    """The ``ssh`` annotation: ``accessed`` once someone logged in on the node this boot."""
    current_image: str = ""
    desired_image: str = ""
    """Image mode: the ``currentImage`` and ``desiredImage`` annotations."""
    health_gate: dict[str, str] | None = None
    """The last health gate's result (``mcd-project.github.io/health-gate-state``)."""

    @property
    def next_step(self) -> str:
        return next_step(self.node, self.state, self.reason)

    def to_json(self) -> dict[str, Any]:
        """camelCase keys, as the plan's and the API's own."""
        return {
            "node": self.node,
            "state": self.state,
            "reason": self.reason,
            "current": self.current,
            "desired": self.desired,
            "unschedulable": self.unschedulable,
            "drain": self.drain,
            "plan": self.plan,
            "planError": self.plan_error,
            "ssh": self.ssh,
            "currentImage": self.current_image,
            "desiredImage": self.desired_image,
            "healthGate": self.health_gate,
            "nextStep": self.next_step,
            "events": self.events,
        }


RUNBOOK = "docs/runbook.md"
RUNBOOK_SECTIONS = (
    ("extensions image", "#18-image-mode-and-extensions"),  # before "rpm-ostree"
    ("desiredImage", "#18-image-mode-and-extensions"),  # before "machineconfig"
    ("unexpected on-disk state", "#1-config-drift-files-on-disk-differ-from-the-current-config"),
    ("machineconfig", "#2-the-desired-machineconfig-cannot-be-read"),
    ("invalid MachineConfig", "#2-the-desired-machineconfig-cannot-be-read"),
    ("drain", "#4-drain"),
    ("uncordon", "#4-drain"),
    ("failed to update OS", "#5-the-os-update-rpm-ostree"),
    ("rpm-ostree", "#5-the-os-update-rpm-ostree"),
    ("reboot command failed", "#7-reboot"),
    ("health gate", "#17-health-gates-and-rollback"),
)
_DRIFTED_PATH = re.compile(r'for file:? "([^"]+)"')


def next_step(node: str, state: str, reason: str) -> str:
    """What to run next on a Degraded node, with the runbook section that explains it."""
    if state != NodeState.DEGRADED:
        return ""
    anchor = next((a for text, a in RUNBOOK_SECTIONS if text in reason), "")
    where = f"{RUNBOOK}{anchor}"
    if reason.startswith("unexpected on-disk state"):
        paths = " ".join(_DRIFTED_PATH.findall(reason))
        command = f"mcd restore {paths} --root /" if paths else "mcd restore --root /"
        return f"on node {node}: {command}  (see {where})"
    return f"see {where}; then mcd status --node {node} --wait"


def wait_code(report: NodeReport) -> int | None:
    """``status --wait``'s exit code for the node as it is, or None while it is on its way:
    0 Done on the desired config, 1 Unreconcilable, 2 Degraded (cloud-init's table)."""
    if report.state == NodeState.DEGRADED:
        return 2
    if report.state == NodeState.UNRECONCILABLE:
        return 1
    if report.state == NodeState.DONE and (not report.desired or report.current == report.desired):
        return 0
    return None


def _plan(
    kube: Kube, current: str, desired: str, annotations: Mapping[str, str]
) -> tuple[dict[str, Any] | None, str]:
    if not desired or desired == current:
        return None, ""
    try:
        return plan_between(kube, current, desired, annotations).to_json(), ""
    except (MachineConfigNotFound, ConfigError, PoliciesNotReady) as e:
        return None, str(e)


def plan_between(
    kube: Kube, current: str, desired: str, annotations: Mapping[str, str] | None = None
) -> UpdatePlan:
    """The plan the agent would make: both configs and the policies read from the cluster;
    from the Node's ``annotations``, what its host can apply and its soft-reboot setting."""
    old, new = _config_named(kube, current), _config_named(kube, desired)
    a = annotations or {}
    return make_plan(
        old, new, cluster_policies(kube, timeout=0),
        host=support_from_annotation(a.get(HOST_SUPPORT_ANNOTATION, "")),
        soft_reboot=soft_reboot_allowed(a.get(SOFT_REBOOT_ANNOTATION)),
        overrides=irreconcilable_overrides(kube),
    )  # fmt: skip


def _config_named(kube: Kube, name: str) -> MachineConfig:
    """The MachineConfig ``name``; the empty config in memory, never fetched (upstream
    ``canonicalizeEmptyMC``)."""
    if name == EMPTY_CONFIG_NAME:
        return empty_machine_config()
    return load_machine_config(json.dumps(get_machine_config(kube, name)).encode())


def pending_plan(kube: Kube, node: str) -> UpdatePlan:
    """``mcd plan --from-cluster NODE``: the node's currentConfig -> desiredConfig."""
    a = annotations_of(kube.request("GET", node_path(node)))
    current = a.get(Annotation.CURRENT_CONFIG, "")
    if not current:
        raise ConfigError(f"node {node} has no {Annotation.CURRENT_CONFIG} annotation")
    return plan_between(kube, current, a.get(Annotation.DESIRED_CONFIG) or current, a)


def _events(kube: Kube, node: str, namespace: str | None, limit: int) -> list[dict[str, str]]:
    """The Node's last Events: in ``namespace``, else in every namespace (the agent's own
    namespace and ``default``, where ``OSUpdateStaged`` goes), else in the local default."""
    selector = {"fieldSelector": f"involvedObject.kind=Node,involvedObject.name={node}"}
    paths = [f"/api/v1/namespaces/{namespace}/events"] if namespace else [
        "/api/v1/events", f"/api/v1/namespaces/{default_namespace()}/events"]  # fmt: skip
    listing: Obj = {}
    for path in paths:
        try:
            listing = kube.request("GET", path, selector)
            break
        except ApiError:
            continue
    items = [
        e for e in listing.get("items") or [] if e.get("involvedObject", {}).get("name") == node
    ]
    items.sort(key=lambda e: (e.get("lastTimestamp") or "", e["metadata"].get("name", "")))
    return [
        {"time": e.get("lastTimestamp") or "", "type": e.get("type", ""),
         "reason": e.get("reason", ""), "message": e.get("message", "")}
        for e in items[-limit:]
    ]  # fmt: skip


def node_report(
    kube: Kube, node: str, namespace: str | None = None, events: int = 10
) -> NodeReport:
    obj: Obj = kube.request("GET", node_path(node))
    a = annotations_of(obj)
    current, desired = a.get(Annotation.CURRENT_CONFIG, ""), a.get(Annotation.DESIRED_CONFIG, "")
    plan, plan_error = _plan(kube, current, desired, a)
    drain = {
        k: v
        for k, v in (
            ("desiredDrain", a.get(Annotation.DESIRED_DRAIN, "")),
            ("lastAppliedDrain", a.get(Annotation.LAST_APPLIED_DRAIN, "")),
            ("cordonedBy", cordoned_by(a) or ""),
        )
        if v
    }
    return NodeReport(
        node=node,
        state=a.get(Annotation.STATE) or NodeState.DONE,
        reason=a.get(Annotation.REASON, ""),
        current=current,
        desired=desired,
        unschedulable=bool((obj.get("spec") or {}).get("unschedulable")),
        drain=drain,
        plan=plan,
        plan_error=plan_error,
        events=_events(kube, node, namespace, events),
        ssh=a.get(Annotation.SSH, ""),
        current_image=a.get(Annotation.CURRENT_IMAGE, ""),
        desired_image=a.get(Annotation.DESIRED_IMAGE, ""),
        health_gate=describe_state(a.get(STATE_ANNOTATION, "")),
    )


def render_report(r: NodeReport) -> str:
    lines = [
        f"Node:            {r.node}",
        f"State:           {r.state}",
        f"Reason:          {printable(r.reason) or '-'}",
    ]
    if r.ssh == SSH_ACCESSED:  # beside the reason: drift and a login read together
        lines.append("Logins:          accessed (someone logged in since boot; files may have "
                     "been edited by hand)")  # fmt: skip
    if r.next_step:
        lines.append(f"Next:            {r.next_step}")
    lines += [
        f"Current config:  {r.current or '-'}",
        f"Desired config:  {r.desired or '-'}",
    ]
    if r.current_image or r.desired_image:  # image mode
        current, desired = printable(r.current_image) or "-", printable(r.desired_image) or "-"
        lines.append(f"Image:           {current} -> {desired}" if current != desired
                     else f"Image:           {current}")  # fmt: skip
    drain = ", ".join(f"{k}={v}" for k, v in r.drain.items())
    lines.append(f"Schedulable:     {'no (cordoned)' if r.unschedulable else 'yes'}"
                 + (f"; {drain}" if drain else ""))  # fmt: skip
    if r.plan is not None:
        p = r.plan
        files = p["files"]
        counts = ", ".join(f"{len(files[k])} {k}" for k in ("added", "changed", "removed"))
        lines.append(
            f"Pending update:  {p['old']} -> {p['new']}: cost {p['cost']}, "
            f"reboot {'yes' if p['reboot'] else 'no'}, drain {'yes' if p['drain'] else 'no'}; "
            f"files {counts}"
        )
        if p.get("policySource"):
            lines.append(f"                 node disruption policies: {p['policySource']}")
        if p["reboot"] and p.get("rebootKind"):
            kind = p["rebootKind"]
            lines.append(f"                 reboot kind: {kind['kind']} ({kind['why']})")
        if not p["reconcilable"]:
            lines.append(f"                 not reconcilable: {printable(p['reason'])}")
    elif r.plan_error:
        lines.append(f"Pending update:  cannot plan: {printable(r.plan_error)}")
    else:
        lines.append("Pending update:  none")
    if r.health_gate:
        g = r.health_gate
        failed = f": check {g['check']} failed" if g.get("check") else ""
        result, config = g.get("result", "?"), g.get("config", "?")
        when = g.get("time", "?")
        lines.append(f"Health gate:     {printable(f'{result} for {config}{failed} at {when}')}")
    lines.append("Recent events:" if r.events else "Recent events:   none")
    for e in r.events:
        lines.append(f"  {e['time']}  {e['type']:<7} {e['reason']}: {printable(e['message'])}")
    return "\n".join(lines) + "\n"
