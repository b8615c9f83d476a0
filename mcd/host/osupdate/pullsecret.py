"""The registry pull secret for rpm-ostree (upstream ``useMergedPullSecrets``/``linkAuthFile``).

rpm-ostree reads registry credentials from ``/run/ostree/auth.json``. Upstream
links that path (a symlink, never a copy) to the merged internal-registry +
global pull secret ``/etc/mco/internal-registry-pull-secret.json`` when that
file exists and is valid JSON, else to the cluster pull secret
``/var/lib/kubelet/config.json``. An older link is removed and made again each
time; nothing else removes it: ``/run`` is a tmpfs, so the link is gone after
a reboot until the agent starts again. The secret's bytes are read only to
check that they are JSON, and never logged.
"""

from __future__ import annotations

import errno
import json
import logging
import os

from mcd.host.errors import HostError
from mcd.host.rootfs import Root

log = logging.getLogger(__name__)

OSTREE_AUTH_FILE = "/run/ostree/auth.json"
KUBELET_AUTH_FILE = "/var/lib/kubelet/config.json"
INTERNAL_REGISTRY_AUTH_FILE = "/etc/mco/internal-registry-pull-secret.json"


def use_merged_pull_secrets(root: Root) -> str:
    """Link rpm-ostree's auth file as upstream; return the node path it now points to."""
    try:
        data = root.read_bytes(root.symlink_target(INTERNAL_REGISTRY_AUTH_FILE))
    except FileNotFoundError:
        log.error("Merged secret file does not exist; defaulting to cluster pull secret")
        return link_auth_file(root, KUBELET_AUTH_FILE)
    except (OSError, HostError) as e:
        log.error(
            "Merged secret file could not be read; defaulting to cluster pull secret %s",
            type(e).__name__,
        )
        return link_auth_file(root, KUBELET_AUTH_FILE)
    if not _valid_json(data):
        log.error("Merged secret file could not be validated; defaulting to cluster pull secret")
        return link_auth_file(root, KUBELET_AUTH_FILE)
    return link_auth_file(root, INTERNAL_REGISTRY_AUTH_FILE)


def link_auth_file(root: Root, target: str) -> str:
    """Replace ``/run/ostree/auth.json`` with a symlink to ``target`` (a node path)."""
    link = root.host(root.resolve(OSTREE_AUTH_FILE))
    try:
        os.lstat(link)
    except FileNotFoundError:
        os.makedirs(os.path.dirname(link), mode=0o544, exist_ok=True)
    else:
        os.remove(link)
    log.info("Linking rpm-ostree authfile to %s", target)
    try:
        os.symlink(target, link)
    except OSError as e:
        if e.errno != errno.EEXIST:
            raise
        os.remove(link)  # another writer won the race: ours is as good
        os.symlink(target, link)
    return target


def _valid_json(data: bytes) -> bool:
    try:
        json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return False
    return True
