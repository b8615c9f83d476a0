"""The certificate writer (upstream ``syncControllerConfigHandler``).

On every change of the ControllerConfig ``machine-config-controller`` whose
resourceVersion differs from the Node's
``machineconfiguration.openshift.io/lastSyncedControllerConfigResourceVersion``:
write the kubelet CA bundle, the cloud CA, the internal registry pull secret
and the image registry CAs, without a reboot and without touching the update
state, then record the resourceVersion on the Node and log
``Certificate was synced from controllerconfig resourceVersion <rv>`` (upstream
emits no Event here). A failure marks the node ``Degraded`` with the error as its
reason, as upstream's ``handleControllerConfigErr`` does (``failed to set
annotations on node: ...`` when the Node cannot be annotated); it is retried on
the next change or the watch's next list (at most five minutes), and the node
stays Degraded until a sync succeeds, which wakes the update worker to check the
node and set it ``Done`` again (:mod:`mcd.agent.level`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from mcd.agent.update import Context
from mcd.cluster.api import ApiError, Obj
from mcd.cluster.controllerconfig import watch_controller_config
from mcd.cluster.node import annotations_of
from mcd.host.certwriter import write_certificates
from mcd.host.errors import HostError
from mcd.model.certs import CONTROLLER_CONFIG_NAME, certificate_files
from mcd.model.errors import ConfigError
from mcd.model.vocabulary import ANNOTATION_PREFIX

log = logging.getLogger(__name__)

LAST_SYNCED = ANNOTATION_PREFIX + "lastSyncedControllerConfigResourceVersion"


class CertificateSyncError(Exception):
    """A certificate sync that failed after writing (upstream's wrapped errors)."""


def sync_certificates(ctx: Context, controller_config: Obj) -> bool:
    """Write the certificates of ``controller_config`` when new to this node; True if written."""
    certs = certificate_files(controller_config)
    node = ctx.writer.current()
    if annotations_of(node).get(LAST_SYNCED) == certs.resource_version:
        return False
    written = write_certificates(ctx.host.root, certs)
    try:
        ctx.writer.set_annotations({LAST_SYNCED: certs.resource_version})
    except ApiError as e:
        raise CertificateSyncError(f"failed to set annotations on node: {e}") from e
    log.info(
        "Certificate was synced from controllerconfig resourceVersion %s", certs.resource_version
    )
    log.debug("Certificate writer wrote %s", ", ".join(written))
    return True


def run_certificate_writer(
    ctx: Context, stop: threading.Event, recovered: Callable[[], None]
) -> None:
    """Follow the ControllerConfig; ``recovered`` is called when a sync succeeds after a
    failed one (the update worker then clears the Degraded state)."""

    def on_change(obj: Obj) -> None:
        try:
            sync_certificates(ctx, obj)
        except (ConfigError, HostError, OSError, ApiError, CertificateSyncError) as e:
            log.info("Error syncing ControllerConfig %s: %s", CONTROLLER_CONFIG_NAME, e)
            try:
                ctx.status.certificates_failed(str(e) or type(e).__name__)
            except ApiError as err:
                log.error("Could not update annotation: %s", err)
            return
        if ctx.status.certificates_synced():
            recovered()

    watch_controller_config(ctx.kube, CONTROLLER_CONFIG_NAME, on_change, stop)
