"""A kubelet restart deferred by a service-CA rotation (upstream ``deferKubeletRestart`` and
``kubeletRebootstrap``).

When a rotation only adds signers that rotate by themselves
(:mod:`mcd.model.certificates.serviceca`), the
kubelet is not restarted; upstream remembers that and, when the daemon later sees an error
mentioning x509 (a watch, a list: the kubelet's CA is then likely stale) or is stopped other
than by a signal, removes ``/var/lib/kubelet/kubeconfig``, restarts the kubelet so it
bootstraps a new one, and waits up to two minutes for the file to come back. After the x509
case the daemon exits with status 255 (upstream's ``ErrAuxiliary``).

Upstream keeps the flag in memory; mcd keeps it in ``STATE_FILE`` (0600, under the root), so
an agent restarted in between still rebootstraps the kubelet when the x509 error comes.
"""

from __future__ import annotations

import logging
import threading

from mcd.host.errors import HostError
from mcd.host.fs import fsops
from mcd.host.rootfs import Root
from mcd.host.systemd.manager import SystemdManager
from mcd.model.certificates.serviceca import KUBELET_KUBECONFIG, KUBELET_UNIT
from mcd.model.ignition.guards import STATE_DIR

log = logging.getLogger(__name__)

STATE_FILE = STATE_DIR + "/kubelet-restart-deferred"
POLL_INTERVAL = 10.0
POLL_TIMEOUT = 120.0
EXIT_AUXILIARY = 255
"""Upstream's ``os.Exit(255)`` after ``ErrAuxiliary``."""


class RebootstrapError(Exception):
    """The kubelet could not be rebootstrapped (upstream's wrapped errors)."""


def set_deferred(root: Root, deferred: bool) -> None:
    """Remember (or forget) that the kubelet's restart was deferred."""
    if deferred:
        fsops.write_file(root, STATE_FILE, b"deferred\n", 0o600, dir_mode=0o711)
    elif fsops.remove(root, STATE_FILE):
        log.debug("Forgot the deferred kubelet restart")


def deferred(root: Root) -> bool:
    return root.exists(STATE_FILE)


def kubelet_rebootstrap(
    root: Root,
    systemd: SystemdManager,
    interval: float = POLL_INTERVAL,
    timeout: float = POLL_TIMEOUT,
) -> None:
    """Upstream's ``kubeletRebootstrap``: forget the deferral, remove the kubelet's kubeconfig,
    restart the kubelet, wait for the kubelet to write a new kubeconfig."""
    set_deferred(root, False)
    gone = "no such file or directory"  # upstream's os.Remove fails on a missing file too
    try:
        removed = fsops.remove_file(root, KUBELET_KUBECONFIG)
    except OSError as e:
        removed, gone = False, str(e.strerror or e)
    if not removed:
        raise RebootstrapError(
            f"could not remove kubelet's kubeconfig file: remove {KUBELET_KUBECONFIG}: {gone}"
        )
    systemd.restart(KUBELET_UNIT)
    waiter = threading.Event()  # never set: upstream's wait ignores the daemon's stop
    waited = 0.0
    while True:  # upstream polls without an immediate first check
        waiter.wait(interval)
        waited += interval
        if root.exists(KUBELET_KUBECONFIG):
            return
        log.warning(
            "Failed to get kubeconfig file: open %s: no such file or directory", KUBELET_KUBECONFIG
        )
        if waited >= timeout:
            raise RebootstrapError(
                "something went wrong while waiting for kubeconfig file to generate: "
                "context deadline exceeded"
            )


def after_stop(
    root: Root,
    systemd: SystemdManager,
    x509_error: str,
    signaled: bool,
    interval: float = POLL_INTERVAL,
    timeout: float = POLL_TIMEOUT,
) -> int | None:
    """What upstream's ``Run`` does on its way out: after an x509 error, rebootstrap and exit
    255; on a stop that is no signal, rebootstrap when deferred. The exit code to use instead
    of the agent's own, or None."""
    if x509_error:
        log.info(
            '"Re-bootstrapping kubelet in response to deferred kubeconfig changes and %s"',
            x509_error,
        )
    elif signaled or not deferred(root):
        return None
    try:
        kubelet_rebootstrap(root, systemd, interval, timeout)
    except (RebootstrapError, HostError) as e:
        log.error("%s", e)
        return 1
    return EXIT_AUXILIARY if x509_error else None
