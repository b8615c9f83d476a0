"""One ``mcd start`` per host: an exclusive ``flock`` on
``<root>/run/machine-config-daemon-agent.lock``, held for the agent's whole life.

It is not the writer lock (:mod:`mcd.host.lock`, held only while something writes, and taken
by ``once-from``/``restore`` too): this one only says "an agent runs here". The kernel
releases it when the agent dies, however it dies, so an agent that gets it knows that no
other agent is alive on this host, and that a Lease still naming another agent of this
machine names a dead one. The file (0600, ``O_NOFOLLOW``, in the node's ``/run``: gone at
reboot) holds one line saying who holds it.
"""

from __future__ import annotations

import errno
import fcntl
import os
import time

from mcd.host.errors import HostError
from mcd.host.rootfs import Root

AGENT_LOCK = "/run/machine-config-daemon-agent.lock"
MACHINE_ID = "/etc/machine-id"


class AgentLock:
    def __init__(self, root: Root) -> None:
        self.root = root
        self._fd = -1

    @property
    def held(self) -> bool:
        return self._fd >= 0

    def try_hold(self, holder: str) -> bool:
        """Take the lock if no other agent holds it (never blocks); True when held."""
        if self.held:
            return True
        node_dir = os.path.dirname(AGENT_LOCK)
        try:
            host_dir = self.root.host(self.root.resolve(node_dir, follow_last=True))
            os.makedirs(host_dir, 0o755, exist_ok=True)
            path = os.path.join(host_dir, os.path.basename(AGENT_LOCK))
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except (OSError, HostError) as e:
            why = "a symlink is in the way" if getattr(e, "errno", 0) == errno.ELOOP else str(e)
            raise HostError(f"cannot take the agent lock {AGENT_LOCK}: {why}") from e
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        line = f"pid {os.getpid()} ({holder}) since {stamp}\n".encode()
        os.ftruncate(fd, 0)
        os.pwrite(fd, line, 0)
        self._fd = fd
        return True

    def holder(self) -> str:
        """The line the holder wrote ('' when none can be read)."""
        try:
            return self.root.read_bytes(AGENT_LOCK).decode("utf-8", "replace").strip()[:200]
        except (OSError, HostError):
            return ""

    def release(self) -> None:
        if self.held:
            os.close(self._fd)  # closing the descriptor releases the flock
            self._fd = -1


def machine_id(root: Root) -> str:
    """The host's ``/etc/machine-id`` ('' when it has none)."""
    try:
        return root.read_bytes(MACHINE_ID).decode("ascii", "replace").strip()[:64]
    except (OSError, HostError):
        return ""
