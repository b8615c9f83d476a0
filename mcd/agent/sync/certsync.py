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
node and set it ``Done`` again (:mod:`mcd.agent.sync.level`).

Service-CA rotation (the same handler upstream): when the ControllerConfig carries
``machineconfiguration.openshift.io/service-ca-rotate: "true"`` and the Node's
``machineconfiguration.openshift.io/lastObservedServerCAAnnotation`` is not "true" yet,
``ca-bundle.crt`` of ConfigMap ``openshift-machine-config-operator/kubeconfig-data`` becomes
the CA data of ``/etc/kubernetes/kubeconfig`` (:mod:`mcd.model.certificates.serviceca`
decides), the Node
records the value it observed, and the kubelet is stopped, given the same CA data in
``/var/lib/kubelet/kubeconfig`` and started again, unless every added certificate is one of
the signers upstream lets rotate without a restart. No reboot, no drain, no Event.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from mcd.agent.boot import rebootstrap
from mcd.agent.update import progress
from mcd.agent.update.context import Context
from mcd.agent.update.transaction import failure_reason
from mcd.cluster.api import ApiError, Obj
from mcd.cluster.controllerconfig import get_config_map, watch_controller_config
from mcd.cluster.node import annotations_of
from mcd.host.errors import HostError
from mcd.host.ondisk.certwriter import write_certificates, write_kubeconfig
from mcd.model.certificates.certs import CONTROLLER_CONFIG_NAME, certificate_files
from mcd.model.certificates.serviceca import (
    CA_BUNDLE_KEY,
    KUBECONFIG,
    KUBECONFIG_DATA,
    KUBELET_KUBECONFIG,
    KUBELET_UNIT,
    LAST_OBSERVED_SERVER_CA,
    MCO_NAMESPACE,
    SERVICE_CA_ROTATE,
    SERVICE_CA_ROTATE_TRUE,
    CARotation,
    configmap_data,
    load_kubeconfig,
    plan_ca_rotation,
    should_rotate,
    with_ca_data,
)
from mcd.model.errors import ConfigError
from mcd.model.vocabulary import ANNOTATION_PREFIX

log = logging.getLogger(__name__)

LAST_SYNCED = ANNOTATION_PREFIX + "lastSyncedControllerConfigResourceVersion"


class CertificateSyncError(Exception):
    """A certificate sync that failed after writing (upstream's wrapped errors)."""


def sync_certificates(ctx: Context, controller_config: Obj) -> bool:
    """Write the certificates of ``controller_config`` when new to this node, and rotate the
    service CA when the ControllerConfig asks for it; True if anything was synced."""
    certs = certificate_files(controller_config)
    node_annotations = annotations_of(ctx.writer.current())
    cc_annotations = annotations_of(controller_config)
    rotate = cc_annotations.get(SERVICE_CA_ROTATE, "")
    if node_annotations.get(LAST_SYNCED) == certs.resource_version and (
        rotate != SERVICE_CA_ROTATE_TRUE
        or node_annotations.get(LAST_OBSERVED_SERVER_CA, "") == rotate
    ):
        return False
    rotation = None
    if should_rotate(cc_annotations, node_annotations):
        rotation = service_ca_rotation(ctx)
        if rotation is not None:
            rebootstrap.set_deferred(ctx.host.root, rotation.defer_kubelet_restart)
    written = write_certificates(ctx.host.root, certs)
    if rotation is not None and rotation.kubeconfig is not None:
        write_kubeconfig(ctx.host.root, KUBECONFIG, rotation.kubeconfig)
        written.append(KUBECONFIG)
    wanted = {LAST_SYNCED: certs.resource_version}
    if node_annotations.get(LAST_OBSERVED_SERVER_CA, "") != rotate:
        wanted[LAST_OBSERVED_SERVER_CA] = rotate
    try:
        ctx.writer.set_annotations(wanted)
    except ApiError as e:
        raise CertificateSyncError(f"failed to set annotations on node: {e}") from e
    log.info(
        "Certificate was synced from controllerconfig resourceVersion %s", certs.resource_version
    )
    log.debug("Certificate writer wrote %s", ", ".join(written))
    if rotation is not None and rotation.restart_kubelet:
        restart_kubelet(ctx, rotation)
    return True


def service_ca_rotation(ctx: Context) -> CARotation | None:
    """Upstream: read ``kubeconfig-data``; a failed read or a missing key is logged and the
    rotation skipped (the Node still records the value it observed, as upstream)."""
    try:
        cm = get_config_map(ctx.kube, MCO_NAMESPACE, KUBECONFIG_DATA)
    except ApiError as e:
        log.error("Error retrieving %s. %s", KUBECONFIG_DATA, e)
        return None
    try:
        bundle = configmap_data(cm, CA_BUNDLE_KEY)
    except KeyError as e:
        log.error("%s ConfigMap not populated yet. %s", KUBECONFIG_DATA, e.args[0])
        return None
    try:
        kubeconfig = ctx.host.root.read_bytes(KUBECONFIG)
    except OSError as e:
        raise CertificateSyncError(f"open {KUBECONFIG}: {e.strerror or e}") from e
    rotation = plan_ca_rotation(kubeconfig, bundle)
    for message in rotation.messages:
        log.info("%s", message)
    return rotation


def restart_kubelet(ctx: Context, rotation: CARotation) -> None:
    """Upstream: stop the kubelet, give its kubeconfig the new CA data, daemon-reload, start.

    The kubelet's kubeconfig is read and checked before the kubelet is stopped, and a failed
    write still starts it again, so no failure leaves the node without a kubelet."""
    log.info('"restarting kubelet due to server-ca rotation"')
    try:
        doc = load_kubeconfig(ctx.host.root.read_bytes(KUBELET_KUBECONFIG), KUBELET_KUBECONFIG)
    except FileNotFoundError as e:
        log.warning("Failed to get kubeconfig file: %s", e.strerror)
        raise CertificateSyncError(f"open {KUBELET_KUBECONFIG}: {e.strerror}") from e
    except OSError as e:
        raise CertificateSyncError(
            f"unexpected error reading kubeconfig file, open {KUBELET_KUBECONFIG}: {e.strerror}"
        ) from e
    systemd = ctx.host.effects.systemd
    systemd.stop(KUBELET_UNIT)
    try:
        write_kubeconfig(ctx.host.root, KUBELET_KUBECONFIG, with_ca_data(doc, rotation.ca_data))
        systemd.daemon_reload()
    finally:
        systemd.start(KUBELET_UNIT)


def run_certificate_writer(
    ctx: Context, stop: threading.Event, recovered: Callable[[], None]
) -> None:
    """Follow the ControllerConfig; ``recovered`` is called when a sync succeeds after a
    failed one (the update worker then clears the Degraded state)."""

    def on_change(obj: Obj) -> None:
        try:
            sync_certificates(ctx, obj)
        except Exception as e:  # any input at all ends Degraded with a reason, never a retry loop
            reason = sync_failure(e)
            log.info("Error syncing ControllerConfig %s: %s", CONTROLLER_CONFIG_NAME, reason)
            try:
                ctx.status.certificates_failed(reason)
                progress.node_degraded(ctx, reason)
            except ApiError as err:
                log.error("Could not update annotation: %s", err)
            return
        if ctx.status.certificates_synced():
            recovered()

    watch_controller_config(ctx.kube, CONTROLLER_CONFIG_NAME, on_change, stop)


def sync_failure(e: Exception) -> str:
    """The Degraded reason of a failed sync: the error's own words for the kinds a sync
    expects (bad input, the host, the API), the error's kind for anything else."""
    if isinstance(e, (ConfigError, HostError, OSError, ApiError, CertificateSyncError)):
        return str(e) or type(e).__name__
    return failure_reason(e)
