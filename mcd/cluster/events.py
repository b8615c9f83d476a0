"""Events about the Node, with the upstream reasons (``involvedObject`` = the Node), in the
daemon's own namespace as upstream records them (:func:`default_namespace`).

Recording never fails the caller: an Event that cannot be written is logged.
With ``background=True`` (the agent) Events are sent by a sender thread, in
order, as client-go's broadcaster does, so an update never waits for them; a
full queue drops the newest Event with a log line.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from datetime import UTC, datetime
from enum import StrEnum

from mcd.cluster.api import ApiError, Kube, Obj
from mcd.model.text import printable

log = logging.getLogger(__name__)

SOURCE_COMPONENT = "machineconfigdaemon"


class EventType(StrEnum):
    NORMAL = "Normal"
    WARNING = "Warning"


class Reason(StrEnum):
    """Event reasons of the upstream daemon (reference 4.4)."""

    BOOT_RESYNC = "BootResync"
    NODE_DONE = "NodeDone"
    UNCORDON = "Uncordon"
    CORDON = "Cordon"
    DRAIN = "Drain"
    CONFIG_DRIFT_MONITOR_STARTED = "ConfigDriftMonitorStarted"
    CONFIG_DRIFT_MONITOR_STOPPED = "ConfigDriftMonitorStopped"
    IN_CLUSTER_UPGRADE = "InClusterUpgrade"
    OS_UPDATE_STARTED = "OSUpdateStarted"
    OS_UPDATE_STAGED = "OSUpdateStaged"
    OS_UPGRADE_APPLIED = "OSUpgradeApplied"
    OS_UPGRADE_SKIPPED = "OSUpgradeSkipped"
    SKIP_REBOOT = "SkipReboot"
    SERVICE_RELOAD = "ServiceReload"
    SERVICE_RESTART = "ServiceRestart"
    REBOOT = "Reboot"
    ADD_SIGTERM_PROTECTION = "AddSigtermProtection"
    REMOVE_SIGTERM_PROTECTION = "RemoveSigtermProtection"
    ON_DISK_STATE_VALIDATION_FAILED = "OnDiskStateValidationFailed"
    PREFLIGHT_CONFIG_DRIFT_CHECK_FAILED = "PreflightConfigDriftCheckFailed"
    CONFIG_DRIFT_DETECTED = "ConfigDriftDetected"
    FAILED_TO_UNCORDON = "FailedToUncordon"
    FAILED_TO_DRAIN = "FailedToDrain"
    FAILED_TO_RECONCILE = "FailedToReconcile"
    FAILED_SERVICE_RELOAD = "FailedServiceReload"
    FAILED_SERVICE_RESTART = "FailedServiceRestart"
    GOT_SIGTERM_DURING_UPDATE = "GotSigtermDuringUpdate"
    HEALTH_GATE_FAILED = "HealthGateFailed"  # mcd's own: a failed gate rolled the update back
    TRY_REVERTED = "TryReverted"  # mcd's own: a try (annotation) was not confirmed in time


WARNINGS = frozenset(
    {
        Reason.ON_DISK_STATE_VALIDATION_FAILED,
        Reason.PREFLIGHT_CONFIG_DRIFT_CHECK_FAILED,
        Reason.CONFIG_DRIFT_DETECTED,
        Reason.FAILED_TO_UNCORDON,
        Reason.FAILED_TO_DRAIN,
        Reason.FAILED_TO_RECONCILE,
        Reason.FAILED_SERVICE_RELOAD,
        Reason.FAILED_SERVICE_RESTART,
        Reason.GOT_SIGTERM_DURING_UPDATE,
        Reason.HEALTH_GATE_FAILED,
        Reason.TRY_REVERTED,
    }
)


EVENT_NAMESPACE_ENV = "MCD_EVENT_NAMESPACE"
SERVICE_ACCOUNT_NAMESPACE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
STAGED_NAMESPACE = "default"
"""``OSUpdateStaged``: upstream creates it itself, synchronously, in ``default`` with no
involved namespace (``update.go``), not through its namespaced recorder."""


def default_namespace(service_account_namespace: str = SERVICE_ACCOUNT_NAMESPACE) -> str:
    """Where the agent records Events about its Node: the daemon's own namespace, as upstream's
    ``ctrlcommon.NamespacedEventRecorder`` records them in ``openshift-machine-config-operator``
    (``ensureEventNamespace`` gives the Node reference that namespace, so kube-apiserver, which
    wants an Event's namespace to be its involvedObject's, takes it). In order:
    ``$MCD_EVENT_NAMESPACE``, the pod's ``$POD_NAMESPACE``, the service account's namespace
    file, else ``default`` (a host service with a kubeconfig: client-go's place for an Event
    about a cluster-scoped object)."""
    found = os.environ.get(EVENT_NAMESPACE_ENV) or os.environ.get("POD_NAMESPACE")
    if not found:
        try:
            with open(service_account_namespace, encoding="utf-8") as f:
                found = f.read(256).strip()
        except OSError:
            found = ""
    return found or "default"


def node_reference(name: str, uid: str, namespace: str) -> Obj:
    """The Event's ``involvedObject``: the Node, with the Event's namespace unless that is
    ``default`` (upstream ``ensureEventNamespace``; client-go leaves it empty there)."""
    ref: Obj = {"apiVersion": "v1", "kind": "Node", "name": name, "uid": uid}
    if namespace != "default":
        ref["namespace"] = namespace
    return ref


class EventRecorder:
    def __init__(
        self,
        kube: Kube,
        node_name: str,
        node_uid: str = "",
        namespace: str | None = None,
        background: bool = False,
    ) -> None:
        self.kube = kube
        self.node_name = node_name
        self.node_uid = node_uid
        self.namespace = namespace or default_namespace()
        self._queue: queue.Queue[tuple[Reason, str]] | None = None
        if background:
            self._queue = queue.Queue(maxsize=256)
            threading.Thread(target=self._send_queued, name="events", daemon=True).start()

    def record(self, reason: Reason, message: str) -> bool:
        """Create the Event (or queue it); False (and a log line) when that failed. The
        message is one line of printable text, whatever names it quotes."""
        message = printable(message)
        if self._queue is None:
            return self._send(reason, message)
        try:
            self._queue.put_nowait((reason, message))
        except queue.Full:
            log.warning("Event queue full; dropping event %s", reason)
            return False
        return True

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until queued Events are sent (True) or ``timeout`` passes."""
        deadline = time.monotonic() + timeout
        while self._queue is not None and self._queue.unfinished_tasks:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)
        return True

    def _send_queued(self) -> None:
        assert self._queue is not None
        while True:
            reason, message = self._queue.get()
            try:
                self._send(reason, message)
            finally:
                self._queue.task_done()

    def _send(self, reason: Reason, message: str) -> bool:
        namespace = STAGED_NAMESPACE if reason == Reason.OS_UPDATE_STAGED else self.namespace
        involved = node_reference(self.node_name, self.node_uid, namespace)
        body = event_body(involved, str(reason), message, reason in WARNINGS,
                          namespace, SOURCE_COMPONENT, host=self.node_name)  # fmt: skip
        try:
            self.kube.request("POST", f"/api/v1/namespaces/{namespace}/events", body=body)
        except ApiError as e:
            log.warning("Could not record event %s on node %s: %s", reason, self.node_name, e)
            return False
        return True


def event_body(
    involved: Obj,
    reason: str,
    message: str,
    warning: bool,
    namespace: str,
    component: str,
    host: str = "",
) -> Obj:
    """A ``v1`` Event about ``involved`` (its apiVersion, kind, name and uid), as the
    upstream daemon and controllers record them: one occurrence, stamped now."""
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    source = {"component": component, **({"host": host} if host else {})}
    body: Obj = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{involved.get('name', '')}.{time.time_ns():x}",
                     "namespace": namespace},
        "involvedObject": involved,
        "reason": reason,
        "message": message,
        "type": str(EventType.WARNING if warning else EventType.NORMAL),
        "source": source,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
        "reportingComponent": component,
    }  # fmt: skip
    if host:
        body["reportingInstance"] = host
    return body
