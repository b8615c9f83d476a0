"""The agent's own MachineConfigNode: created on first report (spec: node, pool, desired
config; owned by the Node), then one status write per phase change, none when the phase is
already reported. The last object written is kept, so a report costs no GET. A report that
fails is logged, never the end of an update (upstream logs and goes on)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import UTC, datetime

from mcd.cluster.api import MERGE_PATCH, ApiError, Kube, Obj
from mcd.cluster.node import annotations_of
from mcd.model.node.mcn import NOT_YET_SET, Condition, image_reference_ok, next_status, pool_of
from mcd.model.vocabulary import Annotation

log = logging.getLogger(__name__)

API = "machineconfiguration.openshift.io/v1"
COLLECTION = f"/apis/{API}/machineconfignodes"


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class MachineConfigNodeReporter:
    def __init__(self, kube: Kube, node_name: str) -> None:
        self.kube = kube
        self.node_name = node_name
        self.requests = 0
        self._mcn: Obj | None = None
        self._pending: Obj | None = None
        self._missing_api = False
        self._lock = threading.Lock()

    def report(
        self,
        node: Obj,
        parent: Condition,
        sub: Condition | None = None,
        *,
        defer: bool = False,
        fields: Obj | None = None,
    ) -> None:
        """Report a phase. ``defer``: only in the status to send, which goes with the next
        report that is not deferred (phases a moment apart share one write). ``fields``:
        other status fields written with it (``pinnedImageSets``)."""
        if self._missing_api:
            return
        with self._lock:
            try:
                self._report(node, parent, sub, defer, fields or {})
            except ApiError as e:
                self._pending = None
                if e.status == 404 and self._mcn is None:
                    self._missing_api = True  # no MachineConfigNode CRD in this cluster
                    log.info("No MachineConfigNode API in this cluster; not reporting to it")
                    return
                self._mcn = None  # read afresh next time
                log.warning("Error applying MCN status: %s", e)

    def _request(
        self, method: str, path: str, body: Obj | None = None, ctype: str | None = None
    ) -> Obj:
        self.requests += 1
        if ctype is None:
            return self.kube.request(method, path, body=body)
        return self.kube.request(method, path, body=body, content_type=ctype)

    def _get_or_create(self, node: Obj) -> Obj:
        if self._mcn is not None:
            return self._mcn
        path = f"{COLLECTION}/{self.node_name}"
        try:
            self._mcn = self._request("GET", path)
            return self._mcn
        except ApiError as e:
            if e.status != 404:
                raise
        meta = node.get("metadata") or {}
        desired = annotations_of(node).get(Annotation.DESIRED_CONFIG) or NOT_YET_SET
        self._mcn = self._request(
            "POST",
            COLLECTION,
            {
                "apiVersion": API,
                "kind": "MachineConfigNode",
                "metadata": {
                    "name": self.node_name,
                    "ownerReferences": [
                        {
                            "apiVersion": "v1",
                            "kind": "Node",
                            "name": self.node_name,
                            "uid": meta.get("uid", ""),
                        }
                    ],
                },
                "spec": {
                    "node": {"name": self.node_name},
                    "pool": {"name": pool_of(meta.get("labels") or {})},
                    "configVersion": {"desired": desired},
                },
            },
        )
        return self._mcn

    def _report(
        self, node: Obj, parent: Condition, sub: Condition | None, defer: bool, fields: Obj
    ) -> None:
        mcn = self._get_or_create(node)
        annotations = annotations_of(node)
        desired = annotations.get(Annotation.DESIRED_CONFIG, "")
        images = (
            annotations.get(Annotation.CURRENT_IMAGE, ""),
            annotations.get(Annotation.DESIRED_IMAGE, ""),
        )
        path = f"{COLLECTION}/{self.node_name}"
        spec = mcn.get("spec") or {}
        spec_desired = spec.get("configVersion", {}).get("desired", "")
        spec_patch: Obj = {}
        if desired and spec_desired != desired:  # upstream: the spec follows desiredConfig
            spec_patch["configVersion"] = {"desired": desired}
        spec_image = (spec.get("configImage") or {}).get("desiredImage", "")
        wanted = images[1] if image_reference_ok(images[1]) else ""
        if spec_image != wanted:  # upstream UpdateMachineConfigNodeSpecDesiredAnnotations
            spec_patch["configImage"] = {"desiredImage": wanted} if wanted else None
        if spec_patch:
            mcn = self._request("PATCH", path, {"spec": spec_patch}, MERGE_PATCH)
            self._mcn = mcn
            spec_desired = desired or spec_desired
        status = next_status(
            self._pending or mcn.get("status"),
            parent,
            sub,
            desired_spec=spec_desired,
            desired_annotation=desired,
            current_annotation=annotations.get(Annotation.CURRENT_CONFIG, ""),
            now=_now(),
            image_mode=any(images),
            images=images,
        )
        if status is not None:
            status.update(fields)
            if not any(images) and (mcn.get("status") or {}).get("configImage"):
                status["configImage"] = None  # image mode left: upstream no longer reports it
            self._pending = status
        if defer or self._pending is None:
            return
        status, self._pending = self._pending, None
        status["observedGeneration"] = int((mcn.get("metadata") or {}).get("generation") or 1)
        self._mcn = self._request("PATCH", f"{path}/status", {"status": status}, MERGE_PATCH)

    def set_status_fields(self, node: Obj, fields: Obj) -> bool:
        """Status fields beside the conditions (``irreconcilableChanges``,
        ``pinnedImageSets``): one merge patch of those that differ from the object's (None
        removes a field), none when all match. False when the write failed (logged)."""
        if self._missing_api:
            return False
        with self._lock:
            try:
                status = self._get_or_create(node).get("status") or {}
                changed = {
                    k: v for k, v in fields.items() if status.get(k) != v and (v or k in status)
                }
                if changed:
                    path = f"{COLLECTION}/{self.node_name}/status"
                    self._mcn = self._request("PATCH", path, {"status": changed}, MERGE_PATCH)
                return True
            except ApiError as e:
                self._mcn = None
                log.warning("Error applying MCN status: %s", e)
                return False

    def patch_status(self, node: Obj, change: Callable[[Obj], Obj]) -> bool:
        """The status fields ``change`` computes from the status as it stands (the conditions
        of a deferred phase included, and kept in it), in one merge patch; none when it
        returns nothing. False when the write failed (logged)."""
        if self._missing_api:
            return False
        with self._lock:
            try:
                status = dict(self._get_or_create(node).get("status") or {})
                if self._pending is not None and "conditions" in self._pending:
                    status["conditions"] = self._pending["conditions"]
                fields = change(status)
                if fields:
                    if self._pending is not None and "conditions" in fields:
                        self._pending["conditions"] = fields["conditions"]
                    path = f"{COLLECTION}/{self.node_name}/status"
                    self._mcn = self._request("PATCH", path, {"status": fields}, MERGE_PATCH)
                return True
            except ApiError as e:
                self._mcn = None
                log.warning("Error applying MCN status: %s", e)
                return False

    def status(self) -> Obj:
        """The status last read or written (empty before the first report)."""
        return dict((self._mcn or {}).get("status") or {})
