"""Watching node paths for changes: inotify on their parent directories.

Watches are put on the de-duplicated parent directories of the paths (not
recursive), so an atomic replace (write a temp file, rename over the target)
is seen as well as an in-place write, a ``chmod`` or a removal. Events for
other names in those directories are dropped here. A directory that does not
exist is skipped: the paths in it are reported as missing by validation.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
from collections.abc import Iterable

from inotify_simple import INotify, flags

from mcd.host.errors import PathEscapeError
from mcd.host.rootfs import Root

log = logging.getLogger(__name__)

CHANGES = (
    flags.MODIFY
    | flags.ATTRIB
    | flags.CLOSE_WRITE
    | flags.CREATE
    | flags.DELETE
    | flags.MOVED_FROM
    | flags.MOVED_TO
    | flags.DELETE_SELF
    | flags.MOVE_SELF
)


class PathWatcher:
    """Reports which of a fixed set of node paths changed."""

    def __init__(self, root: Root, paths: Iterable[str]) -> None:
        self._inotify = INotify()
        self._wake_r, self._wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._dirs: dict[int, str] = {}
        self._tracked: set[str] = set()
        self.overflowed = False
        by_dir: dict[str, set[str]] = {}
        resolving = root.snapshot()  # read-only: each parent directory resolved once
        for path in paths:
            try:
                resolved = resolving.resolve(path)
            except (PathEscapeError, OSError):
                continue
            parent, _, name = resolved.rpartition("/")
            by_dir.setdefault(parent or "/", set()).add(name)
            self._tracked.add(resolved)
        for directory in sorted(by_dir):
            try:
                wd = self._inotify.add_watch(root.host(directory), CHANGES | flags.ONLYDIR)
            except (FileNotFoundError, NotADirectoryError):
                log.debug("Not watching %s: no such directory", directory)
                continue
            self._dirs[wd] = directory

    @property
    def directories(self) -> list[str]:
        return sorted(self._dirs.values())

    @property
    def paths(self) -> frozenset[str]:
        return frozenset(self._tracked)

    def fileno(self) -> int:
        return int(self._inotify.fileno())

    def interrupt(self) -> None:
        """Make a waiting :meth:`read` return at once (from another thread)."""
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"x")

    def read(self, timeout_ms: int) -> set[str]:
        """Tracked paths that changed, waiting up to ``timeout_ms`` for the first event
        (or until :meth:`interrupt`)."""
        ready, _, _ = select.select(
            [self._inotify.fileno(), self._wake_r], [], [], timeout_ms / 1000
        )
        if self._wake_r in ready:
            with contextlib.suppress(OSError):
                os.read(self._wake_r, 4096)
        if self._inotify.fileno() not in ready:
            return set()
        changed: set[str] = set()
        for event in self._inotify.read(timeout=0):
            if event.mask & flags.Q_OVERFLOW:
                self.overflowed = True  # events were lost: treat everything as changed
                changed |= self._tracked
                continue
            directory = self._dirs.get(event.wd)
            if directory is None:
                continue
            if event.mask & (flags.DELETE_SELF | flags.MOVE_SELF):
                changed |= {p for p in self._tracked if p.rpartition("/")[0] == directory}
                continue
            path = f"{directory.rstrip('/')}/{event.name}"
            if path in self._tracked:
                changed.add(path)
        return changed

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._inotify.close()
        for fd in (self._wake_r, self._wake_w):
            with contextlib.suppress(OSError):
                os.close(fd)
