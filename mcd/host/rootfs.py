"""Paths of the node, seen from the agent: every node path lives under one root.

Symlinks are resolved the way the node itself sees them: an absolute target is
relative to the root, never to the agent's own filesystem. A relative target
that climbs above the root is refused (``PathEscapeError``) rather than followed.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from mcd.host.errors import PathEscapeError

MAX_SYMLINKS = 40


class Root:
    """A node's root directory (``/rootfs`` in a pod, ``/`` on a host, a temp dir in tests)."""

    def __init__(self, path: str | os.PathLike[str], *, cache: bool = False) -> None:
        self.path = os.path.abspath(os.fspath(path))
        self._prefix = "" if self.path == "/" else self.path
        self._parents: dict[str, str] | None = {} if cache else None
        self._changes = 0
        """Bumped by :meth:`changed`: a directory or symlink of this root was made or removed."""
        self._scoped = threading.local()

    def snapshot(self) -> Root:
        """The same root, remembering resolved parent directories: for read-only scans.

        Writers use the plain root, which resolves every path afresh (or, within
        :meth:`caching`, forgets on every directory or symlink change), so a
        directory replaced by a symlink is never written through by mistake.
        """
        return Root(self.path, cache=True)

    @contextmanager
    def caching(self) -> Iterator[None]:
        """Within this block, and in this thread only, remember resolved parent directories.

        For one writer's batch (a transaction's files): the cache starts empty, so nothing
        resolved before the block is trusted, and it is dropped whenever :meth:`changed` is
        called (every directory or symlink :mod:`mcd.host.fs.fsops` creates, replaces or
        removes), so the batch never writes through a symlink it made itself.
        """
        if getattr(self._scoped, "parents", None) is not None:
            yield  # already caching (a nested batch shares the outer one's cache)
            return
        self._scoped.parents, self._scoped.changes = {}, self._changes
        try:
            yield
        finally:
            self._scoped.parents = None

    def changed(self) -> None:
        """A directory or symlink of this root was created, replaced or removed."""
        self._changes += 1

    def __repr__(self) -> str:
        return f"Root({self.path!r})"

    def host(self, node_path: str) -> str:
        """The agent-side path of a resolved node path (no symlink handling)."""
        return self._prefix + node_path if node_path != "/" else self.path

    def resolve(self, node_path: str, follow_last: bool = False) -> str:
        """Resolve symlinks inside the root; return the node path (starting with ``/``).

        Parents are always followed; the last component only with ``follow_last``.
        Missing components are kept as they are.
        """
        head, _, last = node_path.rstrip("/").rpartition("/")
        parent = self._resolve_dir(head or "/")
        if last in ("", "."):
            return parent
        if last == ".." or follow_last:
            return self._walk(parent, [last])
        return _join(parent, last)

    def _resolve_dir(self, node_dir: str) -> str:
        parents = self._parents if self._parents is not None else self._scoped_parents()
        if parents is None:
            return self._walk("/", node_dir.split("/"))
        cached = parents.get(node_dir)
        if cached is None:
            cached = self._walk("/", node_dir.split("/"))
            parents[node_dir] = cached
        return cached

    def _scoped_parents(self) -> dict[str, str] | None:
        parents: dict[str, str] | None = getattr(self._scoped, "parents", None)
        if parents is not None and self._scoped.changes != self._changes:
            parents.clear()  # something was made or removed since: resolve afresh
            self._scoped.changes = self._changes
        return parents

    def _walk(self, start: str, parts: list[str]) -> str:
        current, hops, via = start, 0, ""
        todo = list(reversed(parts))
        while todo:
            part = todo.pop()
            if part in ("", "."):
                continue
            if part == "..":
                if current == "/":
                    where = f"{via} is a symlink leading" if via else "path climbs"
                    raise PathEscapeError(f"{where} outside the root {self.path}")
                current = current.rsplit("/", 1)[0] or "/"
                continue
            candidate = _join(current, part)
            try:
                st = os.lstat(self.host(candidate))
            except (FileNotFoundError, NotADirectoryError):
                st = None
            if st is None or not stat.S_ISLNK(st.st_mode):
                current = candidate
                continue
            hops += 1
            via = candidate
            if hops > MAX_SYMLINKS:
                raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), candidate)
            target = os.readlink(self.host(candidate))
            if target.startswith("/"):
                current = "/"
            todo.extend(reversed(target.split("/")))
        return current

    def host_path(self, node_path: str) -> str:
        """The agent-side path of ``node_path``, its parents resolved inside the root."""
        return self.host(self.resolve(node_path))

    def lstat(self, node_path: str) -> os.stat_result:
        """``lstat`` of the node path (parents resolved inside the root)."""
        return os.lstat(self.host_path(node_path))

    def read_bytes(self, node_path: str) -> bytes:
        """Contents of a regular file; never follows a symlink in the last component."""
        return read_nofollow(self.host_path(node_path))

    def symlink_target(self, node_path: str) -> str:
        """Where a symlink finally points, as a node path (chain resolved inside the root)."""
        try:
            return self.resolve(node_path, follow_last=True)
        except PathEscapeError as e:
            raise PathEscapeError(f"symlink {node_path} leads outside the root: {e}") from e

    def exists(self, node_path: str) -> bool:
        try:
            self.lstat(node_path)
        except FileNotFoundError:
            return False
        return True


def read_nofollow(host_path: str, size_hint: int = 0) -> bytes:
    """Read a whole file without following a symlink in its last component."""
    fd = os.open(host_path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        chunks = []
        want = max(size_hint + 1, 65536)
        while chunk := os.read(fd, want):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _join(directory: str, name: str) -> str:
    return f"{directory.rstrip('/')}/{name}" if name else directory
