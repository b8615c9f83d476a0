"""Write the ControllerConfig certificates on the node (upstream ``writeToDisk`` and the
image registry CA loop of ``syncControllerConfigHandler``).

Bundles keep the mode of the file they replace (0644 for a new one); every write
is atomic. Registry CAs live in ``/etc/docker/certs.d/<registry>/ca.crt``; a
directory there that no longer matches a registry is removed. When
``/etc/docker/certs.d`` does not exist yet, upstream logs it and leaves the
registry CAs for the next sync; so does mcd. Certificate bytes are never logged.
"""

from __future__ import annotations

import logging
import os
import shutil
import stat

from mcd.host.fs import fsops
from mcd.host.rootfs import Root
from mcd.model.certificates.certs import IMAGE_CA_DIR, CertificateFiles
from mcd.model.vocabulary import INTERNAL_REGISTRY_PULL_SECRET

log = logging.getLogger(__name__)


def write_certificates(root: Root, certs: CertificateFiles) -> list[str]:
    """Write every bundle, the pull secret and the registry CAs; return the paths written."""
    written = []
    files = dict(certs.bundles)
    if certs.pull_secret is not None:
        files[INTERNAL_REGISTRY_PULL_SECRET] = certs.pull_secret
    for path, data in files.items():
        fsops.write_file(root, path, data, mode=_mode_of(root, path))
        written.append(path)
    written += _registry_cas(root, certs.registry_cas)
    return written


def write_kubeconfig(root: Root, path: str, data: bytes) -> None:
    """Replace a kubeconfig atomically, keeping its mode (upstream ``writeToDisk``)."""
    fsops.write_file(root, path, data if data.endswith(b"\n") else data + b"\n",
                     mode=_mode_of(root, path))  # fmt: skip


def _mode_of(root: Root, path: str) -> int:
    try:
        st = os.stat(root.host_path(path))
    except OSError:
        return fsops.FILE_MODE
    return stat.S_IMODE(st.st_mode) if stat.S_ISREG(st.st_mode) else fsops.FILE_MODE


def _registry_cas(root: Root, cas: dict[str, bytes]) -> list[str]:
    top = root.host_path(IMAGE_CA_DIR)
    try:
        entries = list(os.scandir(top))
    except OSError as e:
        log.error("%s does not exist yet: %s", IMAGE_CA_DIR, e.strerror or e)
        return []
    for entry in entries:
        if entry.is_dir(follow_symlinks=False) and entry.name not in cas:
            try:
                shutil.rmtree(entry.path)
                log.info("Removed old certificate: %s/%s", IMAGE_CA_DIR, entry.name)
            except OSError:
                log.warning("Could not remove old certificate: %s/%s", IMAGE_CA_DIR, entry.name)
    written = []
    for name, data in cas.items():
        path = f"{IMAGE_CA_DIR}/{name}/ca.crt"
        fsops.write_file(root, path, data)
        written.append(path)
    return written
