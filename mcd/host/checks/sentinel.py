"""Does the node's OS ask for a reboot? kured's three ways, asked of the node under the root:

* a sentinel command (kured's ``--reboot-sentinel-command``), when one is configured: exit
  status 0 means a reboot is required; it alone decides;
* else the sentinel file (kured's ``--reboot-sentinel``, default
  ``/var/run/reboot-required``: Debian's and Ubuntu's ``unattended-upgrades``), its path
  resolved inside the root through the host's own symlinks (``/var/run`` -> ``/run``);
* else, where the node has it, ``needs-restarting -r`` (RHEL-likes, dnf-utils): exit status 1
  means a reboot is required.

A command runs ``chroot``-ed into the root where the root is a mounted host carrying
``/bin/sh`` (the DaemonSet's ``/rootfs``); on ``--root-mount /`` it runs as it is; on any
other root (tests, a mounted image without a shell) from the host, with ``MCD_ROOT`` set to
the root. A command that cannot run, or runs past its timeout, asks for nothing (logged).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess

from mcd.host.errors import HostError
from mcd.host.rootfs import Root
from mcd.model.reboots.requests import DEFAULT_SENTINEL, NEEDS_RESTARTING

log = logging.getLogger(__name__)

TIMEOUT = 60.0
NEEDS_RESTARTING_PATHS = ("/usr/bin/needs-restarting", "/bin/needs-restarting")


def reboot_required(
    root: Root, sentinel: str = DEFAULT_SENTINEL, command: str = "", timeout: float = TIMEOUT
) -> str:
    """What asks for a reboot now (the command, the sentinel's path, or
    ``needs-restarting -r``), or '' when nothing does."""
    if command:
        return command if _run(root, ["/bin/sh", "-c", command], timeout) == 0 else ""
    if sentinel:
        try:
            if root.exists(sentinel):
                return sentinel
        except (OSError, HostError) as e:
            log.warning("Cannot look at the reboot sentinel %s: %s", sentinel, e)
    chrootable = root.path == "/" or root.exists("/bin/sh")
    found = chrootable and any(root.exists(p) for p in NEEDS_RESTARTING_PATHS)
    return NEEDS_RESTARTING if found and _run(root, NEEDS_RESTARTING.split(), timeout) == 1 else ""


def _run(root: Root, argv: list[str], timeout: float) -> int | None:
    """The exit status, or None when the command could not run or timed out."""
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "MCD_ROOT": root.path, "LANG": "C.UTF-8"}
    if root.path != "/" and root.exists("/bin/sh"):
        argv = ["chroot", root.path, *argv]
    try:
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, env=env, start_new_session=True, cwd="/",
        )  # fmt: skip
    except OSError as e:
        log.warning("Cannot run the reboot check %s: %s", argv[-1], e.strerror or e)
        return None
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # the command's own process group
        proc.wait()
        log.warning("The reboot check %s timed out after %gs", argv[-1], timeout)
        return None
