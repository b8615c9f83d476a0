"""The drain controller's writes to the Nodes it drains: cordon and uncordon (verified on the
Node the server returns, retried with upstream's backoff: 5 tries, 10 s doubling), the answer
``lastAppliedDrain``, Events about the Node (source ``machineconfigcontroller``, in
``default`` as client-go puts Events about a cluster-scoped object), and upstream's
MachineConfigNode conditions of a drain that has not succeeded (``UpdateExecuted`` and
``Drained`` Unknown, naming what blocks it). Each write is one merge patch; Node reads come
from the controller's Node cache, not from here."""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from datetime import UTC, datetime

from mcd.cluster.api import MERGE_PATCH, ApiError, Kube, Obj
from mcd.cluster.events import default_namespace, event_body, node_reference
from mcd.cluster.mcn import COLLECTION as MCN_COLLECTION
from mcd.cluster.node import annotations_of, node_path
from mcd.model.node import mcn as m
from mcd.model.vocabulary import Annotation

log = logging.getLogger(__name__)

SOURCE_COMPONENT = (
    "machineconfigcontroller-nodecontroller"  # upstream's drain controller says so too
)
BACKOFF = (10.0, 20.0, 40.0, 80.0)  # between upstream's 5 tries


class DrainNodeWriter:
    def __init__(
        self,
        kube: Kube,
        backoff: Sequence[float] = BACKOFF,
        stop: threading.Event | None = None,
    ) -> None:
        self.kube = kube
        self.backoff = tuple(backoff)
        self.stop = stop or threading.Event()
        self.writes = 0
        self.event_namespace = default_namespace()

    def _patch(self, name: str, patch: Obj) -> Obj:
        self.writes += 1
        return self.kube.request("PATCH", node_path(name), body=patch, content_type=MERGE_PATCH)

    def set_unschedulable(self, name: str, unschedulable: bool) -> Obj:
        """Cordon (True) or uncordon; raises the last error after every try failed."""
        verb = "cordon" if unschedulable else "uncordon"
        patch = {"spec": {"unschedulable": True if unschedulable else None}}
        last: Exception | None = None
        for delay in (*self.backoff, None):
            try:
                node = self._patch(name, patch)
                if bool((node.get("spec") or {}).get("unschedulable")) == unschedulable:
                    log.info("node %s: %s succeeded (currently schedulable: %s)",
                             name, verb, str(not unschedulable).lower())  # fmt: skip
                    return node
                last = ApiError(0, "NotApplied", f"node is still not in {verb} state")
            except ApiError as e:
                if e.status == 404:
                    raise
                last = e
            log.info("node %s: %s failed with: %s, retrying", name, verb, last)
            if delay is None or self.stop.wait(delay):
                break
        raise ApiError(
            0, "Failed", f"node {name}: failed to {verb} ({len(self.backoff) + 1} tries): {last}"
        )

    def answer(self, name: str, request: str) -> Obj:
        """``lastAppliedDrain`` = ``request``: the drain or uncordon asked for is done."""
        return self._patch(name, {"metadata": {"annotations": {
            Annotation.LAST_APPLIED_DRAIN: request}}})  # fmt: skip

    def event(self, node: Obj, reason: str, message: str, warning: bool = False) -> None:
        """An Event about the Node; a failure is only logged."""
        meta = node.get("metadata") or {}
        name = str(meta.get("name", ""))
        namespace = self.event_namespace  # upstream: NamespacedEventRecorder, as the agent's
        involved = node_reference(name, str(meta.get("uid", "")), namespace)
        body = event_body(involved, reason, message, warning, namespace, SOURCE_COMPONENT)
        self.writes += 1
        try:
            self.kube.request("POST", f"/api/v1/namespaces/{namespace}/events", body=body)
        except ApiError as e:
            log.warning("Could not record event %s on node %s: %s", reason, name, e)

    def drain_not_succeeded(self, node: Obj, error: str) -> None:
        """Upstream's MachineConfigNode conditions for a failing drain; nothing when the node
        has none (or the cluster has no such API). A failure is only logged."""
        name = str((node.get("metadata") or {}).get("name") or "")
        path = f"{MCN_COLLECTION}/{name}"
        try:
            mcn = self.kube.request("GET", path)
        except ApiError as e:
            if e.status != 404:
                log.warning("node %s: cannot read its MachineConfigNode: %s", name, e)
            return
        a = annotations_of(node)
        desired, last = (
            a.get(Annotation.DESIRED_DRAIN, ""),
            a.get(Annotation.LAST_APPLIED_DRAIN, ""),
        )
        parent = m.phase(m.UPDATE_EXECUTED, "Node Drain has not succeeded", m.UNKNOWN, m.DRAINED)
        sub = m.child(
            m.UPDATE_EXECUTED,
            m.DRAINED,
            f"Error: Node Drain has not succeeded. Error is: {error} The drain will not be "
            f"complete until desired drainer {desired} matches current drainer {last}",
            m.UNKNOWN,
        )
        spec = ((mcn.get("spec") or {}).get("configVersion") or {}).get("desired", "")
        status = m.next_status(
            mcn.get("status"),
            parent,
            sub,
            desired_spec=str(spec),
            desired_annotation=a.get(Annotation.DESIRED_CONFIG, ""),
            current_annotation=a.get(Annotation.CURRENT_CONFIG, ""),
            now=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        )
        if status is None:
            return
        meta = mcn.get("metadata") or {}
        status["observedGeneration"] = int(meta.get("generation") or 1)
        patch = {"metadata": {"resourceVersion": meta.get("resourceVersion")}, "status": status}
        self.writes += 1
        try:
            self.kube.request("PATCH", f"{path}/status", body=patch, content_type=MERGE_PATCH)
        except ApiError as e:  # 409: the agent wrote meanwhile; its report stands
            log.warning("node %s: cannot report the drain on its MachineConfigNode: %s", name, e)
