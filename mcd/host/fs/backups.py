"""Backups of original OS files, as upstream: ``orig/<path>.mcdorig`` and ``noorig`` stamps.

Before the first write of a managed path, upstream's ``createOrigFile`` decides
whether the file on disk is *original OS content* (shipped by a package, or
present under ``/usr/etc`` on an ostree system). Original content is copied to
``/etc/machine-config-daemon/orig/<path>.mcdorig`` (the first backup wins);
anything else gets an empty ``noorig/<path>.mcdnoorig`` stamp. When the path
leaves the config, the stamp says "delete it" and the backup says "restore it".

Package ownership is asked of the root's own database: ``rpm -qf`` inside the
root (upstream), or ``dpkg-query -S`` against the root's dpkg database (Debian
and Ubuntu nodes, beyond upstream, which skips preservation without rpm).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator

from mcd.host.errors import HostError
from mcd.host.fs import fsops
from mcd.host.rootfs import Root
from mcd.host.runner import Runner
from mcd.model.text import goquote
from mcd.model.vocabulary import NOORIG_DIR, ORIG_DIR

log = logging.getLogger(__name__)

RPM_NOT_OWNED = "is not owned by any package"
DPKG_ADMINDIR = "/var/lib/dpkg"
RPM_BINARIES = ("/usr/bin/rpm", "/bin/rpm")


def orig_path(path: str) -> str:
    return f"{ORIG_DIR}{path}.mcdorig"


def noorig_path(path: str) -> str:
    return f"{NOORIG_DIR}{path}.mcdnoorig"


class PackageDatabase:
    """Is a path shipped by the OS? Asked of the root's rpm or dpkg database."""

    def __init__(self, root: Root, runner: Runner) -> None:
        self._root = root
        self._runner = runner
        self._scoped = threading.local()

    @contextlib.contextmanager
    def remembering(self) -> Iterator[None]:
        """Within this block, and in this thread only, look for the rpm and dpkg databases
        once: for one writer's batch (a transaction's files), not on every file."""
        if getattr(self._scoped, "active", False):
            yield  # a nested batch shares the outer one's answer
            return
        self._scoped.active, self._scoped.manager = True, None
        try:
            yield
        finally:
            self._scoped.active, self._scoped.manager = False, None

    def owns(self, path: str) -> bool:
        if path.startswith("/etc") and self._root.exists("/usr" + path):
            return True  # ostree ships the pristine /etc under /usr/etc
        manager = self._manager()
        if manager == "rpm":
            return self._rpm_owns(path)
        if manager == "dpkg":
            return self._dpkg_owns(path)
        return False

    def _manager(self) -> str:
        """``rpm``, ``dpkg`` or ``""`` (none): remembered within :meth:`remembering`."""
        remembered: str | None = getattr(self._scoped, "manager", None)
        if remembered is not None:
            return remembered
        manager = ""
        if any(self._root.exists(rpm) for rpm in RPM_BINARIES):
            manager = "rpm"
        elif self._root.exists(DPKG_ADMINDIR + "/status"):
            manager = "dpkg"
        if getattr(self._scoped, "active", False):
            self._scoped.manager = manager
        return manager

    def _rpm_owns(self, path: str) -> bool:
        argv = ["rpm", "-qf", path]
        if self._root.path != "/":
            argv = ["chroot", self._root.path, *argv]
        result = self._runner.run(argv, check=False)
        if result.returncode == 0:
            return True
        if RPM_NOT_OWNED in result.stdout + result.stderr:
            return False
        raise HostError(
            f"failed to query whether {path} is owned by a package: {result.stderr.strip()}"
        )

    def _dpkg_owns(self, path: str) -> bool:
        admindir = self._root.host_path(DPKG_ADMINDIR)
        result = self._runner.run(["dpkg-query", f"--admindir={admindir}", "-S", path], check=False)
        if result.returncode == 0:
            return True
        if "no path found matching pattern" in result.stderr:
            return False
        raise HostError(
            f"failed to query whether {path} is owned by a package: {result.stderr.strip()}"
        )


class Backups:
    """``createOrigFile`` and the restore-or-delete decision of ``deleteStaleData``."""

    def __init__(self, root: Root, packages: PackageDatabase) -> None:
        self._root = root
        self._packages = packages

    def batch(self) -> contextlib.AbstractContextManager[None]:
        """For one writer's batch: the package database is looked for once, not per file."""
        return self._packages.remembering()

    def preserve(self, path: str, source: str | None = None) -> None:
        """Back up ``source`` (default ``path``) before ``path`` is first overwritten."""
        source = source or path
        if not self._root.exists(source):
            return
        orig, stamp = orig_path(path), noorig_path(path)
        if not self._packages.owns(source):
            if self._root.exists(stamp):
                return
            if self._root.exists(orig):
                fsops.remove(self._root, orig)  # wrongly preserved before
            fsops.write_file(self._root, stamp, b"")
            return
        if self._root.exists(orig):
            return  # the first backup wins
        log.info("Creating original file backup %s", orig)
        fsops.copy_preserving(self._root, source, orig)

    def retire(self, path: str, keep: str = "") -> None:
        """``path`` left the config: restore its original, or delete it.

        With ``keep`` (the reason), backups are settled but the file stays.
        """
        stamp, orig = noorig_path(path), orig_path(path)
        if self._root.exists(stamp):
            fsops.remove(self._root, stamp)
        elif self._root.exists(orig):
            if self._packages.owns(path):
                log.info("Restoring file %s from %s", goquote(path), orig)
                fsops.copy_preserving(self._root, orig, path)
                fsops.remove(self._root, orig)
                return
            fsops.remove(self._root, orig)
        if keep:
            log.info("Not removing file %s: %s", goquote(path), keep)
            return
        try:
            removed = fsops.remove_file(self._root, path)
        except IsADirectoryError:
            log.warning("Not removing stale file %s: a directory is there", goquote(path))
            return
        if removed:
            log.info("Removed stale file %s", goquote(path))
        else:
            log.warning("Stale file %s was already gone", goquote(path))
