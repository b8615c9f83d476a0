"""The agent's own pod logs kept across a restart (upstream ``preserveDaemonLogs``): when the
agent stops, the kubelet's log directory of its pod (``/var/log/pods/<namespace>_<pod>_<uid>``)
is copied to ``/etc/machine-config-daemon/previous-logs/``, replacing the last copy, so the logs
of the agent that ran before a reboot or a crash can still be read. A failure is logged."""

from __future__ import annotations

import logging
import os
import shutil

from mcd.host.errors import HostError
from mcd.host.rootfs import Root

log = logging.getLogger(__name__)

PODS = "/var/log/pods"
PREVIOUS = "/etc/machine-config-daemon/previous-logs"


def pod_log_dir(root: Root, namespace: str, pod: str) -> str | None:
    """The node path of the pod's log directory, or None."""
    prefix = f"{namespace}_{pod}_"
    try:
        names = sorted(os.listdir(root.host_path(PODS)))
    except (OSError, HostError):
        return None
    found = [n for n in names if n.startswith(prefix)]
    return f"{PODS}/{found[-1]}" if found else None


def preserve(root: Root, namespace: str | None = None, pod: str | None = None) -> bool:
    """Copy the pod's logs (``$POD_NAMESPACE``, ``$POD_NAME``); True when copied."""
    namespace = namespace or os.environ.get("POD_NAMESPACE", "")
    pod = pod or os.environ.get("POD_NAME", "")
    if not namespace or not pod:
        return False  # not a pod: journald keeps a host service's logs
    source = pod_log_dir(root, namespace, pod)
    if source is None:
        log.error("Daemon logs could not be found in %s", PODS)
        return False
    destination = f"{PREVIOUS}/{source.rsplit('/', 1)[1]}"
    try:
        base = root.host_path(PREVIOUS)
        shutil.rmtree(base, ignore_errors=True)
        os.makedirs(base, 0o755, exist_ok=True)
        shutil.copytree(root.host_path(source), root.host_path(destination), symlinks=True)
    except (OSError, HostError) as e:
        log.error("Daemon logs from %s could not be preserved at %s due to error: %s",
                  source, destination, e)  # fmt: skip
        return False
    log.info("Daemon logs from %s preserved at %s", source, destination)
    return True
