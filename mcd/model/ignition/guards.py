"""Where a config may write, judged on clean node paths (pure).

Ignition defines a path as absolute and already simplified: no ``//``, no ``.``
or ``..`` segment, no trailing ``/``. :func:`spelling_problem` refuses any
other spelling, so two spellings of one file never exist and no guard can be
walked around by respelling. The guards themselves (:func:`file_guard`) take a
clean path; the gate applies them to the path as written, and the host applies
them again to the path as it resolves inside the node's root through the
node's own symlinks (RHCOS links ``/var/run`` to ``../run``, ``/home`` to
``var/home``, ``/lib`` to ``usr/lib``, ...), so a symlinked parent cannot
smuggle a write past them either.
"""

from __future__ import annotations

import posixpath

from mcd.model.text import goquote
from mcd.model.vocabulary import (
    CURRENT_CONFIG_PATH,
    FORCE_FILE,
    NOORIG_DIR,
    ORIG_DIR,
    SSH_KEY_PATH,
)

KERNEL_FILESYSTEMS = ("/proc", "/sys", "/dev")
"""A file there is a kernel knob or a device, never a config file (``/proc/sysrq-trigger``
would reboot the node as it is "written")."""
STATE_DIR = "/etc/machine-config-daemon"
UNDO_RECORD = STATE_DIR + "/transaction-undo.json"
"""What each path an update touches was before it (:mod:`mcd.host.ondisk.undo`)."""
UNDO_PREIMAGES = STATE_DIR + "/transaction-undo"
"""Copies of the files an update overwrites, put back by its rollback."""
STATE_PATHS = (
    CURRENT_CONFIG_PATH,
    STATE_DIR + "/transaction.json",
    STATE_DIR + "/transaction-old.json",
    STATE_DIR + "/transaction-new.json",
    UNDO_RECORD,
    UNDO_PREIMAGES,
    ORIG_DIR,
    NOORIG_DIR,
    "/run/machine-config-daemon.lock",
)
"""mcd's own state (currentconfig, the journal, backups, the writer lock): only mcd writes
it. The rest of ``STATE_DIR`` takes files from configs, as upstream's do
(``no-reboot/containers-gpg.pub``, ``policy-for-old-podman.json``)."""
SSH_KEY_PATHS = (SSH_KEY_PATH, "/home/core/.ssh/authorized_keys")
"""core's SSH keys: written from ``passwd.users[].sshAuthorizedKeys`` only."""
WRITABLE_USR = "/usr/local"
"""On an ostree system ``/usr`` is a read-only bind mount; ``/usr/local`` links to
``/var/usrlocal``."""
UNIT_SUFFIXES = frozenset(
    {
        ".service", ".socket", ".device", ".mount", ".automount", ".swap", ".target",
        ".path", ".timer", ".snapshot", ".slice", ".scope",
    }
)  # fmt: skip
NAME_MAX = 255
PATH_MAX = 4096
LONGEST_SUFFIX = ".mcdnoorig"
"""The longest name mcd derives from a target's name (its backup stamp in ``noorig/``)."""
BACKUP_DIR = NOORIG_DIR
"""The longest directory a target's path is copied under (``noorig/<path>.mcdnoorig``)."""

RHCOS_TOPLEVEL_LINKS = {
    "/bin": "usr/bin",
    "/sbin": "usr/sbin",
    "/lib": "usr/lib",
    "/lib64": "usr/lib64",
    "/home": "var/home",
    "/root": "var/roothome",
    "/opt": "var/opt",
    "/srv": "var/srv",
    "/mnt": "var/mnt",
    "/media": "run/media",
    "/ostree": "sysroot/ostree",
    "/usr/local": "../var/usrlocal",
    "/var/run": "../run",
    "/var/lock": "../run/lock",
}
"""The symlinks an RHCOS / Fedora CoreOS root has at its top: usrmerge (the ``filesystem``
package), ostree's ``init-fs`` (``opt``, ``srv``, ``mnt``, ``root``, ``home``, ``media``,
``ostree``), rpm-ostree's ``usr/local``, and ``/var/run``, ``/var/lock``. Tests build roots
with them; the guards must hold through every one."""


def spelling_problem(path: str) -> str | None:
    """Why ``path`` is not a path as Ignition defines one, or None."""
    if not path.startswith("/"):
        return f"path not absolute: {goquote(path)}"
    if "\x00" in path:
        return f"path contains a NUL byte: {goquote(path)}"
    if ".." in path.split("/"):
        return f"path contains a '..' segment: {goquote(path)}"
    if path.endswith("/"):
        return f"path must name a file, not a directory: {goquote(path)}"
    if posixpath.normpath(path) != path or path.startswith("//"):
        return f"path is not fully simplified: {goquote(path)}"
    return None


def length_problem(path: str) -> str | None:
    """Why a target's own name, or one mcd derives from it, would be too long; or None."""
    for part in path.split("/"):
        size = len(part.encode("utf-8", "surrogatepass"))
        if size + len(LONGEST_SUFFIX) > NAME_MAX:
            return (
                f"a name in the path is {size} bytes; with mcd's backup suffix "
                f"{LONGEST_SUFFIX} it would pass NAME_MAX ({NAME_MAX} bytes)"
            )
    total = len(BACKUP_DIR) + len(path.encode("utf-8", "surrogatepass")) + len(LONGEST_SUFFIX)
    if total >= PATH_MAX:
        return f"the path is too long: its backup path would pass PATH_MAX ({PATH_MAX} bytes)"
    return None


def under(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")


def on_readonly_usr(path: str) -> bool:
    """Under ``/usr`` but not ``/usr/local``: read-only on an ostree system."""
    return under(path, "/usr") and not under(path, WRITABLE_USR)


def file_guard(path: str, *, force_file: bool = True) -> str | None:
    """Why a storage.files entry may not write the clean node path ``path``, or None.

    ``/usr`` is left to :func:`on_readonly_usr`: it is read-only only on ostree systems.
    ``force_file=False`` leaves the force file to the reconcilability check, which
    refuses it with upstream's words when it is spelled out.
    """
    top = "/" + path.split("/")[1]
    if top in KERNEL_FILESYSTEMS:
        return f"path {goquote(path)} is on the kernel filesystem {top}"
    if force_file and path == FORCE_FILE:
        return f"cannot create {FORCE_FILE} via Ignition"
    state = state_problem(path)
    if state:
        return state
    if path in SSH_KEY_PATHS:
        return (
            f"{goquote(path)} conflicts with the SSH keys of user core "
            "(set passwd.users[].sshAuthorizedKeys)"
        )
    return None


def unit_guard(path: str) -> str | None:
    """Why a unit or dropin may not live at the clean node path ``path`` (once resolved)."""
    top = "/" + path.split("/")[1]
    if top in KERNEL_FILESYSTEMS:
        return f"path {goquote(path)} is on the kernel filesystem {top}"
    return state_problem(path)


def state_problem(path: str) -> str | None:
    for top in STATE_PATHS:
        if under(path, top):
            return f"path {goquote(path)} is mcd's own state ({top})"
    return None
