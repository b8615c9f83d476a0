"""The controller's writes: rendered MachineConfigs, pools, Nodes' desiredConfig, pool Events.

Every write is one request. Pools are written as upstream's render and node controllers
do: ``spec.configuration`` through the object, everything else through ``/status``.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping
from typing import Any

from mcd.cluster.api import MERGE_PATCH, ApiError, Kube, Obj
from mcd.cluster.configs import MACHINECONFIGS
from mcd.cluster.events import default_namespace, event_body
from mcd.cluster.policies import irreconcilable_overrides
from mcd.model.drain.budgets import DRAIN_RELEASED
from mcd.model.planning.reconcile import Overrides
from mcd.model.vocabulary import Annotation

log = logging.getLogger(__name__)

POOLS = "/apis/machineconfiguration.openshift.io/v1/machineconfigpools"
NODES = "/api/v1/nodes"
PINNED_IMAGE_SETS = "/apis/machineconfiguration.openshift.io/v1/pinnedimagesets"
SOURCE_COMPONENT = "machineconfigcontroller-nodecontroller"


NODE_ANNOTATIONS = ("machineconfiguration.openshift.io/", "mcd-project.github.io/")
"""The only Node annotations the controller reads (the rest stay out of its cache)."""


def node_fields(node: Obj) -> Obj:
    """What the controller reads of a Node (its informer keeps only this): name, uid,
    resourceVersion, creation time, labels, mcd's and upstream's annotations, taints, the
    cordon and the conditions' type and status. The strings Nodes repeat (keys, config
    names, states, label values) are kept once for all of them (``sys.intern``)."""
    meta = node.get("metadata") or {}
    annotations = {_shared(k): _shared(v) for k, v in (meta.get("annotations") or {}).items()
                   if k.startswith(NODE_ANNOTATIONS)}  # fmt: skip
    kept = {k: meta[k] for k in ("name", "uid", "resourceVersion", "creationTimestamp")
            if k in meta}  # fmt: skip
    labels = {_shared(k): _shared(v) for k, v in (meta.get("labels") or {}).items()}
    spec = node.get("spec") or {}
    return {
        "metadata": {**kept, "labels": labels, "annotations": annotations},
        "spec": {k: spec[k] for k in ("taints", "unschedulable") if k in spec},
        "status": _status((node.get("status") or {}).get("conditions") or []),
    }


def _shared(value: Any) -> Any:
    return sys.intern(value) if isinstance(value, str) and len(value) <= 256 else value


_STATUSES: dict[tuple[tuple[Any, Any], ...], Obj] = {}
STATUSES_SHARED = 256
"""Distinct kept statuses shared by every Node that has one (most Nodes' conditions say the
same: a status object per Node was 300 bytes of each in the cache)."""


def _status(conditions: list[Obj]) -> Obj:
    """``{"conditions": [{type, status}...]}``, one object for all the Nodes that have the
    same (readers never change what the cache holds)."""
    key = tuple((c.get("type"), c.get("status")) for c in conditions)
    status = _STATUSES.get(key)
    if status is None:
        status = {"conditions": [{"type": _shared(t), "status": _shared(s)} for t, s in key]}
        if len(_STATUSES) < STATUSES_SHARED:
            _STATUSES[key] = status
    return status


class PoolWriter:
    def __init__(self, kube: Kube) -> None:
        self.kube = kube
        self.event_namespace = default_namespace()
        """Where Events about pools go: the controller's own namespace, as upstream's render
        and node controllers record them through ``NamespacedEventRecorder`` (the agent's
        rule, :func:`mcd.cluster.events.default_namespace`)."""
        self.writes = 0

    def create_config(self, obj: Obj) -> Obj | None:
        """Create a rendered config; None when it already exists (it is never changed)."""
        self.writes += 1
        try:
            return self.kube.request("POST", MACHINECONFIGS, body=obj)
        except ApiError as e:
            if e.status == 409:
                return None
            raise

    def irreconcilable_overrides(self) -> Overrides:
        """The irreconcilable changes MachineConfiguration/cluster allows (none without it)."""
        return irreconcilable_overrides(self.kube)

    def delete_config(self, name: str) -> None:
        self.writes += 1
        try:
            self.kube.request("DELETE", f"{MACHINECONFIGS}/{name}")
        except ApiError as e:
            if e.status != 404:
                raise

    def set_configuration(
        self, pool: str, configuration: Obj, annotations: Mapping[str, str | None] | None = None
    ) -> Obj:
        """``spec.configuration``, and with ``annotations`` those pool annotations (None
        removes one) in the same write."""
        self.writes += 1
        patch: Obj = {"spec": {"configuration": configuration}}
        if annotations:
            patch["metadata"] = {"annotations": dict(annotations)}
        return self.kube.request("PATCH", f"{POOLS}/{pool}", body=patch, content_type=MERGE_PATCH)

    def set_pool_annotation(self, pool: str, key: str, value: str | None) -> Obj:
        """Set (or, with None, remove) one annotation on the pool."""
        self.writes += 1
        patch = {"metadata": {"annotations": {key: value}}}
        return self.kube.request("PATCH", f"{POOLS}/{pool}", body=patch, content_type=MERGE_PATCH)

    def pinned_image_sets(self) -> list[Obj] | None:
        """Every PinnedImageSet; None when the cluster serves no such API (no CRD)."""
        try:
            return list(self.kube.request("GET", PINNED_IMAGE_SETS).get("items") or [])
        except ApiError as e:
            if e.status == 404:
                return None
            raise

    def set_pinned_image_sets(self, pool: str, refs: list[Obj] | None) -> Obj:
        """``spec.pinnedImageSets`` (None removes it)."""
        self.writes += 1
        patch = {"spec": {"pinnedImageSets": refs}}
        return self.kube.request("PATCH", f"{POOLS}/{pool}", body=patch, content_type=MERGE_PATCH)

    def set_status(self, pool: str, status: Obj) -> Obj:
        self.writes += 1
        return self.kube.request(
            "PATCH", f"{POOLS}/{pool}/status", body={"status": status}, content_type=MERGE_PATCH
        )

    def set_desired(
        self, node: str, config: str, taints: list[Any] | None = None, resource_version: str = ""
    ) -> Obj:
        """``desiredConfig``; with ``taints``, the node's new taints in the same write, only
        if the node is still at ``resource_version`` (409 otherwise)."""
        self.writes += 1
        patch: Obj = {"metadata": {"annotations": {Annotation.DESIRED_CONFIG: config}}}
        if taints is not None:
            patch["metadata"]["resourceVersion"] = resource_version
            patch["spec"] = {"taints": taints or None}
        return self._node(node, patch)

    def release(self, node: str, config: str, mark: str) -> Obj:
        """Take a node's ``desiredConfig`` back to ``config`` (its drain timed out) and mark
        it (``mcd-project.github.io/drain-released``) in one write."""
        self.writes += 1
        annotations = {Annotation.DESIRED_CONFIG: config, DRAIN_RELEASED: mark}
        patch = {"metadata": {"annotations": annotations}}
        return self._node(node, patch)

    def set_node_annotation(self, node: str, key: str, value: str | None) -> Obj:
        """One annotation of a Node (``None`` removes it)."""
        self.writes += 1
        return self._node(node, {"metadata": {"annotations": {key: value}}})

    def set_taints(self, node: str, taints: list[Any], resource_version: str) -> Obj:
        """Replace the node's taints, only if it is still the version they were read from."""
        self.writes += 1
        patch = {"metadata": {"resourceVersion": resource_version},
                 "spec": {"taints": taints or None}}  # fmt: skip
        return self._node(node, patch)

    def _node(self, node: str, patch: Obj) -> Obj:
        """PATCH a Node; what comes back is what the controller caches of it
        (:func:`node_fields`): a wave's hundreds of written Nodes are held until the pass
        ends, and whole (managedFields and all) they were most of the peak memory."""
        return node_fields(
            self.kube.request("PATCH", f"{NODES}/{node}", body=patch, content_type=MERGE_PATCH)
        )

    def event(self, pool: Obj, reason: str, message: str, warning: bool = False) -> None:
        """An Event on the pool (upstream's reasons), or on the object of another ``kind``
        (a rendered MachineConfig); a failure is only logged. The message is capped at 4096
        characters."""
        if len(message) > 4096:
            message = message[:4040] + f"... ({len(message) - 4040} more characters)"
        meta = pool.get("metadata") or {}
        involved = {
            "apiVersion": "machineconfiguration.openshift.io/v1",
            "kind": str(pool.get("kind") or "MachineConfigPool"),
            "name": meta.get("name", ""),
            "uid": meta.get("uid", ""),
        }
        if self.event_namespace != "default":  # upstream ensureEventNamespace; the API server
            involved["namespace"] = self.event_namespace  # wants the Event's namespace here
        body = event_body(
            involved, reason, message, warning, self.event_namespace, SOURCE_COMPONENT
        )
        self.writes += 1
        try:
            self.kube.request(
                "POST", f"/api/v1/namespaces/{self.event_namespace}/events", body=body
            )
        except ApiError as e:
            log.warning("Could not record event %s on pool %s: %s", reason, meta.get("name"), e)
