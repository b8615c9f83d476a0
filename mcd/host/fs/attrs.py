"""File attributes that make a path impossible to write or to undo: ``chattr +i`` (immutable)
and ``chattr +a`` (append-only), read with the ``FS_IOC_GETFLAGS`` ioctl, as ``lsattr`` does.

An atomic write renames a temp file over its target: neither an immutable or append-only
target nor such a directory lets that happen, even as root. The preflight finds them before
anything is written (:func:`mcd.host.effects.HostEffects.check_targets`), so an update never
writes half a node it then cannot roll back.
"""

from __future__ import annotations

import fcntl
import os
import stat
import struct

FS_IOC_GETFLAGS = 0x80086601  # _IOR('f', 1, long); the kernel reads and writes an int
FS_IMMUTABLE_FL = 0x00000010
FS_APPEND_FL = 0x00000020

_OPEN = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY


def flags(host_path: str) -> int:
    """The inode flags of ``host_path`` (0 for a symlink, a device, a filesystem without
    them, or a path that is not there: nothing that stops a rename)."""
    try:
        st = os.lstat(host_path)
        if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
            return 0  # a symlink is replaced, not written through; a device is never opened
        fd = os.open(host_path, _OPEN)
    except OSError:
        return 0  # not there (or gone since): judged by the write itself
    try:
        buf = fcntl.ioctl(fd, FS_IOC_GETFLAGS, bytes(8))
    except OSError:
        return 0  # ENOTTY / EOPNOTSUPP: tmpfs before 6.0, overlay on some kernels
    finally:
        os.close(fd)
    return int(struct.unpack("I", buf[:4])[0])


def unchangeable(host_path: str) -> str:
    """``"immutable (chattr +i)"``, ``"append-only (chattr +a)"`` or ``""``."""
    value = flags(host_path)
    if value & FS_IMMUTABLE_FL:
        return "immutable (chattr +i)"
    if value & FS_APPEND_FL:
        return "append-only (chattr +a)"
    return ""
