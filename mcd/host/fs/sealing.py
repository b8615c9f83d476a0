"""mcd's own state is readable by root alone.

``currentconfig`` and the update journal hold whole configs (pull secret,
password hashes); ``orig/`` holds copies of OS files that may be private. They
are written 0600, ``orig/`` and ``noorig/`` are 0700, and :func:`seal_state`
fixes the modes a previous version (or a hand) left behind, at the start of
every command that writes and after each update's first write.

``/etc/machine-config-daemon`` itself is made 0711, not 0700: configs put files
there that others must reach by name (upstream's
``no-reboot/containers-gpg.pub`` is named by ``/etc/containers/policy.json``,
which rootless podman reads), so it keeps its search bit but loses listing and
reading for anyone but root.
"""

from __future__ import annotations

import logging
import os
import stat

from mcd.host.errors import HostError
from mcd.host.rootfs import Root
from mcd.model.ignition.guards import STATE_DIR, STATE_PATHS

log = logging.getLogger(__name__)

STATE_FILE_MODE = 0o600
PRIVATE_DIR_MODE = 0o700
STATE_DIR_MODE = 0o711
ABANDONED = ".abandoned"


def seal_state(root: Root) -> list[str]:
    """Fix the modes of mcd's state files and directories; returns what was changed."""
    fixed: list[str] = []
    _seal(root, STATE_DIR, STATE_DIR_MODE, fixed, only_if=0o066)
    for path in STATE_PATHS:
        if not path.startswith(STATE_DIR + "/"):
            continue
        _seal(root, path, None, fixed)
        _seal(root, path + ABANDONED, None, fixed)
    for path in fixed:
        log.info("Made %s readable by root alone", path)
    return fixed


def _seal(root: Root, path: str, mode: int | None, fixed: list[str], only_if: int = 0o7777) -> None:
    try:
        host = root.host_path(path)
        st = os.lstat(host)
    except (OSError, HostError):
        return
    if stat.S_ISDIR(st.st_mode):
        want = PRIVATE_DIR_MODE if mode is None else mode
    elif stat.S_ISREG(st.st_mode):
        want = STATE_FILE_MODE if mode is None else mode
    else:
        return  # a symlink or a device is never followed nor changed
    have = stat.S_IMODE(st.st_mode)
    if have == want or not have & only_if:
        return
    fd = os.open(host, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        os.fchmod(fd, want)
    finally:
        os.close(fd)
    fixed.append(path)
