"""MachineConfigs, read by name (custom resource ``machineconfiguration.openshift.io/v1``)."""

from __future__ import annotations

import logging
import threading

from mcd.cluster.api import ApiError, Kube, Obj
from mcd.cluster.watch import Backoff

log = logging.getLogger(__name__)

MACHINECONFIGS = "/apis/machineconfiguration.openshift.io/v1/machineconfigs"


class MachineConfigNotFound(Exception):
    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f'machineconfig.machineconfiguration.openshift.io "{name}" not found')


def get_machine_config(kube: Kube, name: str) -> Obj:
    """The MachineConfig object as a dict; :class:`MachineConfigNotFound` when it does not exist."""
    try:
        return kube.request("GET", f"{MACHINECONFIGS}/{name}")
    except ApiError as e:
        if e.status == 404:
            raise MachineConfigNotFound(name) from e
        raise


def wait_for_machine_config(
    kube: Kube, name: str, stop: threading.Event, watch_seconds: int = 300
) -> bool:
    """Block until MachineConfig ``name`` exists (True), or until ``stop`` is set (False).

    One list and then a watch, both narrowed to that one name.
    """
    backoff = Backoff(initial=1.0, maximum=30.0)
    selector = f"metadata.name={name}"
    while not stop.is_set():
        try:
            listing = kube.request("GET", MACHINECONFIGS, {"fieldSelector": selector})
            if listing.get("items"):
                return True
            query = {
                "fieldSelector": selector,
                "resourceVersion": (listing.get("metadata") or {}).get("resourceVersion"),
                "timeoutSeconds": watch_seconds,
            }
            for event in kube.stream(MACHINECONFIGS, query, timeout=watch_seconds + 30):
                if event.get("type") in ("ADDED", "MODIFIED"):
                    return True
                if event.get("type") == "ERROR" or stop.is_set():
                    break
            backoff.reset()
        except (ApiError, ValueError) as e:
            log.debug("Waiting for MachineConfig %s: %s", name, e)
            stop.wait(backoff.next())
    return False
