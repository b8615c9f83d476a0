"""Is a node's agent running? What ``mcd status --cluster`` asks before it believes a node's
``state`` annotation: an agent that is not running wrote it, and nothing updates it.

Two signs, either is enough: a pod of the DaemonSet (``daemonset/base/03-daemonset.yaml``: label
``app.kubernetes.io/name=mcd``) on the node that is Running and Ready, or, for an agent
outside pods (``mcd start`` as a host service), the node Lease it renews
(:mod:`mcd.cluster.nodelease`: named after the node, holder ``<pod or host>_<8 hex>[@machine]``)
whose ``renewTime`` plus ``leaseDurationSeconds`` is not past. When neither holds, the reason
is the kubelet's: the agent container's waiting reason and message (``ImagePullBackOff:
Back-off pulling image ...``), else the pod's reason or phase, else the Lease's age.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from mcd.cli.fleet.shapes import NodeAgent
from mcd.cli.output import human_duration

Obj = Mapping[str, Any]

AGENT_SELECTOR = "app.kubernetes.io/name=mcd"
"""The DaemonSet's pod label (its ``spec.selector``)."""
PODS = "/api/v1/pods"
LEASES = "/apis/coordination.k8s.io/v1/leases"
KUBELET_LEASES = "kube-node-lease"
"""The kubelets' own Leases, also named after their nodes: not an agent's."""
_HOLDER = re.compile(r"_[0-9a-f]{8}(@|$)")


def _meta(obj: Obj) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _ready(pod: Obj) -> bool:
    status = pod.get("status") or {}
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or []
    )
    return status.get("phase") == "Running" and ready and not _meta(pod).get("deletionTimestamp")


def pod_reason(pod: Obj) -> str:
    """Why a pod of the agent is not running, as ``kubectl get pod`` and ``describe`` say."""
    status = pod.get("status") or {}
    if _meta(pod).get("deletionTimestamp"):
        return "Terminating"
    for c in [
        *(status.get("initContainerStatuses") or []),
        *(status.get("containerStatuses") or []),
    ]:
        for kind in ("waiting", "terminated"):
            state = (c.get("state") or {}).get(kind)
            if state and state.get("reason"):
                message = str(state.get("message") or "")
                return f"{state['reason']}: {message}" if message else str(state["reason"])
    if status.get("reason"):
        return str(status["reason"]) + (f": {status['message']}" if status.get("message") else "")
    for c in status.get("conditions") or []:
        if c.get("status") == "False" and c.get("reason"):
            message = f": {c['message']}" if c.get("message") else ""
            return f"{status.get('phase') or 'Pending'}, {c['type']} {c['reason']}{message}"
    phase = str(status.get("phase") or "Pending")
    return f"{phase}, not Ready" if phase == "Running" else phase


def _time(text: object) -> datetime | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)
    except ValueError:
        return None


def agent_of(node: str, pods: Sequence[Obj], leases: Sequence[Obj], now: datetime) -> NodeAgent:
    """The node's agent as its pods and Leases show it."""
    mine = [p for p in pods if (p.get("spec") or {}).get("nodeName") == node]
    for pod in mine:
        if _ready(pod):
            return NodeAgent(
                node, True, pod=f"{_meta(pod).get('namespace')}/{_meta(pod).get('name')}"
            )
    pod_names = {str(_meta(p).get("name") or "") for p in mine}
    stale = ""
    for lease in leases:
        meta, spec = _meta(lease), lease.get("spec") or {}
        holder = str(spec.get("holderIdentity") or "")
        if meta.get("name") != node or meta.get("namespace") == KUBELET_LEASES:
            continue
        if not _HOLDER.search(holder) or holder.rsplit("_", 1)[0] in pod_names:
            continue  # not an agent's Lease, or held by a pod of the node that is not running
        renewed = _time(spec.get("renewTime"))
        if renewed is None:
            continue
        age = (now - renewed).total_seconds()
        if age <= float(spec.get("leaseDurationSeconds") or 0):
            return NodeAgent(node, True)
        where = f"{meta.get('namespace')}/{node}"
        stale = f"no agent pod; Lease {where} not renewed for {human_duration(age)}"
    if mine:
        pod = sorted(mine, key=lambda p: str(_meta(p).get("creationTimestamp") or ""))[-1]
        where = f"{_meta(pod).get('namespace')}/{_meta(pod).get('name')}"
        return NodeAgent(node, False, pod_reason(pod), where)
    return NodeAgent(node, False, stale or f"no agent pod ({AGENT_SELECTOR}) and no agent Lease")
