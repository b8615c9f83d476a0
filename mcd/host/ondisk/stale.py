"""Removing what left the config (upstream ``deleteStaleData``).

Files, dropins and units of the old config that the new one no longer has are
restored from their original backup or deleted; a handful of paths owned by
other writers are never deleted, and a file whose path became a dropin of a
unit in the new config is kept.
"""

from __future__ import annotations

import logging

from mcd.host.fs import fsops
from mcd.host.fs.backups import Backups
from mcd.host.rootfs import Root
from mcd.host.systemd.manager import SystemdError, SystemdManager
from mcd.model.ignition.config import IgnitionConfig
from mcd.model.vocabulary import (
    CLOUD_CA_BUNDLE,
    KUBELET_CA,
    USER_CA_BUNDLE,
    dropin_path,
    unit_path,
)

log = logging.getLogger(__name__)

NEVER_DELETE = frozenset({USER_CA_BUNDLE, KUBELET_CA, CLOUD_CA_BUNDLE})
DOCKER_CERTS = "/etc/docker/certs.d"
LEAKED_SYMLINKS = (
    "/etc/systemd/system/network-online.target.requires/node-valid-hostname.service",
    "/etc/systemd/system/network-online.target.wants/ovs-configuration.service",
)


def never_deleted(path: str) -> bool:
    return path in NEVER_DELETE or DOCKER_CERTS in path.rsplit("/", 1)[0]


def delete_stale_data(
    root: Root,
    old: IgnitionConfig,
    new: IgnitionConfig,
    backups: Backups,
    systemd: SystemdManager,
) -> None:
    new_paths = {f.path for f in new.files}
    for file in old.files:
        if file.path in new_paths or never_deleted(file.path):
            continue
        keep = "replaced with systemd dropin" if new.is_dropin_path(file.path) else ""
        backups.retire(file.path, keep=keep)

    new_dropins = {dropin_path(u.name, d.name) for u in new.units for d in u.dropins}
    new_units = {u.name for u in new.units}
    for unit in old.units:
        for dropin in unit.dropins:
            path = dropin_path(unit.name, dropin.name)
            if path not in new_dropins:
                backups.retire(path)
        if unit.name in new_units:
            continue
        try:
            systemd.preset([unit.name])
        except SystemdError as e:
            log.warning("Preset of %s failed: %s", unit.name, e)
        backups.retire(unit_path(unit.name))

    for link in LEAKED_SYMLINKS:
        fsops.remove(root, link)
