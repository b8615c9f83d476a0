"""Write the ControllerConfig certificates on the node (upstream ``writeToDisk`` and the
image registry CA loop of ``syncControllerConfigHandler``).

Bundles keep the mode of the file they replace (0644 for a new one); every write
is atomic. Registry CAs live in ``/etc/docker/certs.d/<registry>/ca.crt``; a
directory there that no longer matches a registry is removed, only ever inside that
directory (a symlinked ``/etc/docker/certs.d`` or registry directory is refused). When
``/etc/docker/certs.d`` does not exist yet, upstream logs it and leaves the
registry CAs for the next sync; so does mcd. Certificate bytes are never logged.
"""

from __future__ import annotations

import logging
import os
import shutil
import stat

from mcd.host.errors import HostError
from mcd.host.fs import fsops
from mcd.host.rootfs import Root
from mcd.model.certificates.certs import IMAGE_CA_DIR, CertificateFiles
from mcd.model.text import goquote, printable
from mcd.model.vocabulary import INTERNAL_REGISTRY_PULL_SECRET

log = logging.getLogger(__name__)


def write_certificates(root: Root, certs: CertificateFiles) -> list[str]:
    """Write every bundle, the pull secret and the registry CAs; return the paths written."""
    written = []
    files = dict(certs.bundles)
    if certs.pull_secret is not None:
        files[INTERNAL_REGISTRY_PULL_SECRET] = certs.pull_secret
    fd = _open_certs_d(root)  # a symlinked one is refused before anything is written
    try:
        if fd is not None:
            for name in certs.registry_cas:
                _check_registry_dir(fd, name)
        for path, data in files.items():
            fsops.write_file(root, path, data, mode=_mode_of(root, path))
            written.append(path)
        if fd is not None:
            written += _registry_cas(root, fd, certs.registry_cas)
    finally:
        if fd is not None:
            os.close(fd)
    return written


def write_kubeconfig(root: Root, path: str, data: bytes) -> None:
    """Replace a kubeconfig atomically, keeping its mode (upstream ``writeToDisk``)."""
    fsops.write_file(root, path, data if data.endswith(b"\n") else data + b"\n",
                     mode=_mode_of(root, path))  # fmt: skip


def _mode_of(root: Root, path: str) -> int:
    try:
        st = root.lstat(path)  # a symlink there is replaced, never followed
    except (OSError, HostError):
        return fsops.FILE_MODE
    return stat.S_IMODE(st.st_mode) if stat.S_ISREG(st.st_mode) else fsops.FILE_MODE


def _open_certs_d(root: Root) -> int | None:
    """``/etc/docker/certs.d`` opened without following a symlink (None, logged, when it does
    not exist yet, as upstream); a symlink or anything but a directory there is refused."""
    try:
        return os.open(root.host_path(IMAGE_CA_DIR), _DIR_FLAGS)
    except FileNotFoundError as e:
        log.error("%s does not exist yet: %s", IMAGE_CA_DIR, e.strerror or e)
        return None
    except OSError as e:
        raise HostError(f"refusing to manage {IMAGE_CA_DIR}: {_not_a_directory(root, e)}") from e


def _registry_cas(root: Root, fd: int, cas: dict[str, bytes]) -> list[str]:
    """Remove the directories no registry has any more and write each registry's ``ca.crt``,
    only ever inside ``/etc/docker/certs.d`` itself (``fd``): every removal is made relative
    to it, so nothing outside it is judged, followed or deleted."""
    _remove_stale(fd, cas)
    written = []
    for name, data in cas.items():
        path = f"{IMAGE_CA_DIR}/{name}/ca.crt"
        fsops.write_file(root, path, data)
        written.append(path)
    return written


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _not_a_directory(root: Root, e: OSError) -> str:
    try:
        st = root.lstat(IMAGE_CA_DIR)
    except (OSError, HostError):
        return e.strerror or str(e)
    if stat.S_ISLNK(st.st_mode):
        target = os.readlink(root.host_path(IMAGE_CA_DIR))
        return f"it is a symlink (to {goquote(target)}), not a directory of its own"
    return "it is not a directory" if not stat.S_ISDIR(st.st_mode) else e.strerror or str(e)


def _remove_stale(fd: int, cas: dict[str, bytes]) -> None:
    with os.scandir(fd) as entries:
        stale = [e.name for e in entries if e.is_dir(follow_symlinks=False) and e.name not in cas]
    for name in stale:
        shown = printable(f"{IMAGE_CA_DIR}/{name}")
        try:  # relative to the directory's fd: never through a symlink, never outside it
            shutil.rmtree(name, dir_fd=fd)
            log.info("Removed old certificate: %s", shown)
        except OSError as e:
            log.warning("Could not remove old certificate: %s: %s", shown, e.strerror or e)


def _check_registry_dir(fd: int, name: str) -> None:
    """A registry's directory is a directory (or missing): a symlink there would have its
    ``ca.crt`` written wherever it leads."""
    try:
        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(st.st_mode):
        raise HostError(
            f"refusing to write {goquote(f'{IMAGE_CA_DIR}/{name}/ca.crt')}: "
            f"{goquote(f'{IMAGE_CA_DIR}/{name}')} is a symlink, not a directory of its own"
        )
