"""The ControllerConfig ``machine-config-controller``, watched by name (the certificate writer).

Upstream runs an informer on ControllerConfigs; mcd lists and watches the one
object with a field selector, resumes from the last resourceVersion and backs
off on errors. A cluster without the kind (plain Kubernetes) answers 404: the
watch then checks again every few minutes.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from mcd.cluster.api import ApiError, Kube, Obj
from mcd.cluster.watch import Backoff

log = logging.getLogger(__name__)

CONTROLLERCONFIGS = "/apis/machineconfiguration.openshift.io/v1/controllerconfigs"
CONTROLLER_CONFIG = f"{CONTROLLERCONFIGS}/machine-config-controller"
ABSENT_RECHECK = 300.0


def base_images(kube: Kube) -> tuple[str, str]:
    """The base OS and extensions images of the ControllerConfig ``machine-config-controller``
    (upstream's ``GetBaseImageContainer``: ``spec.baseOSContainerImage`` and
    ``spec.baseOSExtensionsContainerImage``), read once; ``("", "")`` where it does not exist
    (plain Kubernetes) or may not be read. Other API errors are raised. The one reading of
    them for the controller's render and ``mcd plan --pool``'s preview."""
    try:
        spec = kube.request("GET", CONTROLLER_CONFIG).get("spec") or {}
    except ApiError as e:
        if e.status not in (403, 404):
            raise
        return ("", "")
    return (str(spec.get("baseOSContainerImage") or ""),
            str(spec.get("baseOSExtensionsContainerImage") or ""))  # fmt: skip


def watch_controller_config(
    kube: Kube,
    name: str,
    on_change: Callable[[Obj], None],
    stop: threading.Event,
    watch_seconds: int = 300,
) -> None:
    """Call ``on_change`` with the object at start and on every change, until ``stop``."""
    backoff = Backoff(initial=1.0, maximum=30.0)
    selector = f"metadata.name={name}"
    while not stop.is_set():
        try:
            listing = kube.request("GET", CONTROLLERCONFIGS, {"fieldSelector": selector})
            for item in listing.get("items") or []:
                on_change(item)
            version = (listing.get("metadata") or {}).get("resourceVersion")
            while not stop.is_set():
                query = {
                    "fieldSelector": selector,
                    "resourceVersion": version,
                    "timeoutSeconds": watch_seconds,
                    "allowWatchBookmarks": "true",
                }
                for event in kube.stream(CONTROLLERCONFIGS, query, timeout=watch_seconds + 30):
                    obj = event.get("object") or {}
                    if event.get("type") == "ERROR":
                        raise ApiError(int(obj.get("code") or 500), "WatchError", str(obj))
                    version = (obj.get("metadata") or {}).get("resourceVersion", version)
                    if event.get("type") in ("ADDED", "MODIFIED"):
                        on_change(obj)
                    if stop.is_set():
                        return
                backoff.reset()
        except ApiError as e:
            if e.status == 404:
                log.info("No ControllerConfig kind on this cluster; no certificates to write")
                stop.wait(ABSENT_RECHECK)
                continue
            log.warning("Watch of ControllerConfig %s: %s", name, e)
            stop.wait(backoff.next())
        except (ValueError, OSError) as e:
            log.warning("Watch of ControllerConfig %s: %s", name, e)
            stop.wait(backoff.next())


def get_config_map(kube: Kube, namespace: str, name: str) -> Obj:
    """One ConfigMap by name (the service-CA rotation reads ``kubeconfig-data``)."""
    return kube.request("GET", f"/api/v1/namespaces/{namespace}/configmaps/{name}")
