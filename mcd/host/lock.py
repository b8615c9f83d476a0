"""One writer at a time: an exclusive ``flock`` on ``<root>/run/machine-config-daemon.lock``.

Every command that changes the node (``once-from``, ``restore``, ``pivot``,
``firstboot-complete-machineconfig``) and the agent, for each update and for
the recovery of an interrupted one, hold this lock while they write. The lock
lives in the node's ``/run`` (resolved inside the root, so ``/var/run`` and a
pod's ``/rootfs/run`` name the same file as the host's ``/run``): a tmpfs, so a
stale file never outlives a boot, and ``flock`` itself is released by the
kernel when its holder dies, however it dies. The file is 0600, created with
``O_NOFOLLOW``; after taking the lock the holder writes one line into it (pid,
what it is doing, since when) so that the writer that has to wait can say who
it waits for.

A second writer either refuses at once (``wait=0``, the commands) with one line
naming the holder, or waits up to ``wait`` seconds (the agent), logging who it
waits for, and then refuses with the same line. ``wait=True`` waits for ever.

Within one process the lock is re-entrant (a thread that holds it may take it
again, as the agent's boot checks do when they start an update); another
thread of the same process waits like another process would.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import math
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from mcd.host.errors import HostError
from mcd.host.rootfs import Root

log = logging.getLogger(__name__)

LOCK_PATH = "/run/machine-config-daemon.lock"
POLL_SECONDS = 0.1


class LockBusy(HostError):
    """Another writer holds the node; the message names it."""

    def __init__(self, message: str, holder: str) -> None:
        super().__init__(message)
        self.holder = holder


@dataclass(frozen=True)
class Held:
    """The lock, held: its node path and the line this holder wrote into it."""

    path: str
    holder: str


class _Owner:
    """The process-wide state of one lock file: the thread that holds it and how often."""

    def __init__(self) -> None:
        self.mutex = threading.RLock()
        self.fd = -1
        self.depth = 0


_owners: dict[str, _Owner] = {}
_owners_guard = threading.Lock()


def _owner(key: str) -> _Owner:
    with _owners_guard:
        return _owners.setdefault(key, _Owner())


def _deadline(wait: bool | float) -> float:
    if wait is True:
        return math.inf
    if wait is False:
        return 0.0
    return max(0.0, float(wait))


@contextmanager
def writer_lock(root: Root, holder: str, wait: bool | float = False) -> Iterator[Held]:
    """Hold the node's writer lock for the ``with`` block.

    ``holder`` says who takes it (``"mcd once-from x.yaml"``); it is written
    into the lock file with the pid and the time. ``wait``: seconds to wait for
    another writer (``False``/0: refuse at once; ``True``: wait for ever).
    Raises :class:`LockBusy` when the lock is not free in time.
    """
    host_path = _lock_file(root)
    owner = _owner(host_path)
    budget = _deadline(wait)
    if budget == 0:
        got = owner.mutex.acquire(blocking=False)
    else:
        got = owner.mutex.acquire(timeout=-1 if budget == math.inf else budget)
    if not got:
        raise _busy(host_path, "another thread of this process")
    try:
        if owner.depth == 0:
            owner.fd = _acquire(host_path, holder, budget)
        owner.depth += 1
        try:
            yield Held(LOCK_PATH, holder)
        finally:
            owner.depth -= 1
            if owner.depth == 0:
                os.close(owner.fd)  # closing the last descriptor releases the flock
                owner.fd = -1
    finally:
        owner.mutex.release()


def holder_of(root: Root) -> str:
    """The line the current (or last) holder wrote into the lock file; '' when none."""
    try:
        data = root.read_bytes(LOCK_PATH)
    except (OSError, HostError):
        return ""
    return data.decode("utf-8", "replace").strip()


def _lock_file(root: Root) -> str:
    node_dir = os.path.dirname(LOCK_PATH)
    try:
        resolved = root.resolve(node_dir, follow_last=True)
    except HostError as e:
        raise HostError(f"cannot take the writer lock {LOCK_PATH}: {e}") from e
    host_dir = root.host(resolved)
    if not os.path.isdir(host_dir):
        os.makedirs(host_dir, 0o755, exist_ok=True)
    return os.path.join(host_dir, os.path.basename(LOCK_PATH))


def _acquire(host_path: str, holder: str, budget: float) -> int:
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(host_path, flags, 0o600)
    except OSError as e:
        why = "a symlink is in the way" if e.errno == errno.ELOOP else (e.strerror or str(e))
        raise HostError(f"cannot take the writer lock {LOCK_PATH}: {why}") from e
    try:
        os.fchmod(fd, 0o600)
        start, announced = time.monotonic(), False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                waited = time.monotonic() - start
                if waited >= budget:
                    raise _busy(host_path, _read_holder(fd)) from None
                if not announced:
                    log.warning(
                        "Waiting for the writer lock %s, held by %s",
                        LOCK_PATH, _read_holder(fd) or "another writer",
                    )  # fmt: skip
                    announced = True
                time.sleep(min(POLL_SECONDS, budget - waited))
        line = f"pid {os.getpid()} ({_printable(holder)}) since {_now()}\n".encode()
        os.ftruncate(fd, 0)
        os.pwrite(fd, line, 0)
        return fd
    except BaseException:
        os.close(fd)
        raise


def _read_holder(fd: int) -> str:
    try:
        return os.pread(fd, 4096, 0).decode("utf-8", "replace").strip()
    except OSError:
        return ""


def _busy(host_path: str, holder: str) -> LockBusy:
    who = holder or "another writer"
    return LockBusy(
        f"another writer holds the node: {who}; try again when it has finished (lock {LOCK_PATH})",
        holder,
    )


def _printable(text: str) -> str:
    """One line whatever ``text`` holds: control characters become ``\\xNN`` escapes."""
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text)[:512]


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
