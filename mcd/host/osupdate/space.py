"""The disk space check before an OS image is staged: the filesystem that will hold it
(the OSTree repository under ``/sysroot``, else the root's own) must have room for it.

Upstream checks space before it pulls pinned images (``checkNodeAllocatableStorage``:
:mod:`mcd.model.node.pinned`); an OS image is pulled into the OSTree repository, which
lives on the node's root filesystem. The size of an image is not known before its pull, so
the room asked for is a floor, ``MCD_STAGE_MIN_FREE_BYTES`` (default 4 GiB: a RHCOS image
unpacked, with OSTree's own 3% reserve on a 120 GiB disk). A stage that would not fit
fails the update with this module's reason before the node is drained.
"""

from __future__ import annotations

import logging
import os

from mcd.host.rootfs import Root

log = logging.getLogger(__name__)

MIN_FREE_ENV = "MCD_STAGE_MIN_FREE_BYTES"
DEFAULT_MIN_FREE = 4 * 2**30
REPOSITORY = "/sysroot"


def min_free() -> int:
    value = os.environ.get(MIN_FREE_ENV, "")
    try:
        return int(value) if value else DEFAULT_MIN_FREE
    except ValueError:
        log.warning("Ignoring %s=%r: not a number of bytes", MIN_FREE_ENV, value)
        return DEFAULT_MIN_FREE


def where(root: Root) -> str:
    """The node path whose filesystem holds the OSTree repository."""
    return REPOSITORY if root.exists(REPOSITORY) else "/"


def free_bytes(root: Root, node_path: str) -> int:
    """Bytes an unprivileged writer may still use on the filesystem of ``node_path``."""
    st = os.statvfs(root.host_path(node_path))
    return st.f_bavail * st.f_frsize


def refusal(root: Root, image: str) -> str:
    """'' when staging ``image`` fits, else the reason (no pull is started)."""
    path, needed = where(root), min_free()
    try:
        free = free_bytes(root, path)
    except OSError as e:
        return f"cannot stage OS image {image}: cannot read free space of {path}: {e}"
    if free >= needed:
        return ""
    return (
        f"not enough disk space to stage OS image {image}: {free} bytes free on {path}, "
        f"{needed} required ({MIN_FREE_ENV})"
    )
