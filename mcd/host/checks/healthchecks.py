"""Health checks that look at the node itself: the kubelet's health endpoint, the units a
config enables (asked of systemd over D-Bus), and the admin's required checks.

Required checks follow greenboot: every executable regular file in
``/etc/mcd/health.d/required.d/`` under the root is run in name order, each with a timeout
(the gate's ``check_timeout``, or the seconds in a ``<name>.timeout`` file beside it); a
non-zero exit, a timeout or a check that cannot start fails the gate. Where the root is a
mounted host carrying ``/bin/sh`` (the DaemonSet's ``/rootfs``) a check runs ``chroot``-ed
into it, so it sees the node as the node does; otherwise it runs from its path under the root
with ``MCD_ROOT`` set. Only a summary of a check's output is kept (first and last lines,
bounded, control characters escaped).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import stat
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import IO

from mcd.host.errors import HostError
from mcd.host.rootfs import Root
from mcd.host.systemd.manager import SystemdError, SystemdManager
from mcd.model.machineconfig import MachineConfig
from mcd.model.node.health import (
    REQUIRED_DIR,
    CheckResult,
    GateSettings,
    Status,
    enabled_units,
    summarize,
)
from mcd.model.text import printable

log = logging.getLogger(__name__)

KUBELET_UNITS = (
    "/etc/systemd/system/kubelet.service",
    "/usr/lib/systemd/system/kubelet.service",
    "/lib/systemd/system/kubelet.service",
)
OUTPUT_KEEP = 64 * 1024
POLL = 0.5
UNHEALTHY = ("failed", "auto-restart")


def _monotonic() -> float:
    return time.monotonic()


def kubelet_check(
    root: Root,
    mc: MachineConfig,
    settings: GateSettings,
    *,
    offline: bool,
    sleep: Callable[[float], None] = time.sleep,
) -> CheckResult:
    """The kubelet answers ``ok`` on its health endpoint within the gate's timeout.

    Skipped (with a note) on an offline root, and where no kubelet is configured: no
    ``kubelet.service`` in the config nor among the root's unit files."""
    name = "kubelet"
    if offline:
        return CheckResult(name, Status.SKIPPED, "offline root: no kubelet runs from it")
    in_config = any(u.name == "kubelet.service" for u in mc.ignition.units)
    if not in_config and not any(root.exists(p) for p in KUBELET_UNITS):
        return CheckResult(name, Status.SKIPPED, "no kubelet.service configured on this node")
    start = _monotonic()
    deadline = start + settings.timeout
    last = ""
    while True:
        try:
            with urllib.request.urlopen(settings.kubelet_url, timeout=5) as reply:
                body = reply.read(256).decode("utf-8", "replace")
                if reply.status == 200 and body.strip() == "ok":
                    return CheckResult(name, Status.PASSED, "", _monotonic() - start)
                last = f"HTTP {reply.status}: {summarize(body)}"
        except urllib.error.HTTPError as e:
            last = f"HTTP {e.code}"
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            last = summarize(str(reason))
        if _monotonic() >= deadline:
            note = f"{settings.kubelet_url} not healthy after {settings.timeout:g}s: {last}"
            return CheckResult(name, Status.FAILED, note, _monotonic() - start)
        sleep(POLL)


def units_check(systemd: SystemdManager, mc: MachineConfig, *, offline: bool) -> CheckResult:
    """No unit the config enables has failed or waits to restart after a crash. A unit that
    ran and exited (``/bin/true``), or that the update enabled but nothing started yet, is
    ``inactive`` and passes: systemd cannot tell those apart from a unit never wanted."""
    name = "units"
    wanted = enabled_units([(u.name, u.enabled, bool(u.mask)) for u in mc.ignition.units])
    if not wanted:
        return CheckResult(name, Status.SKIPPED, "the config enables no units")
    if offline or not systemd.live:
        return CheckResult(name, Status.SKIPPED, "offline root: no systemd runs the units")
    start = _monotonic()
    try:
        states = systemd.active_states(wanted)
    except SystemdError as e:
        return CheckResult(name, Status.FAILED, f"cannot ask systemd: {summarize(str(e))}")
    bad = [f"{u} is {states[u]}" for u in wanted if states.get(u) in UNHEALTHY]
    if bad:
        return CheckResult(name, Status.FAILED, summarize("; ".join(bad)), _monotonic() - start)
    active = sum(1 for u in wanted if states.get(u) == "active")
    note = f"{active} of {len(wanted)} active, none failed"
    return CheckResult(name, Status.PASSED, note, _monotonic() - start)


def required_checks(root: Root, settings: GateSettings) -> list[CheckResult]:
    """Run each executable in the required-checks directory (name order), one result each."""
    try:
        directory = root.host_path(REQUIRED_DIR)
        names = sorted(os.listdir(directory))
    except FileNotFoundError:
        return []
    except (OSError, HostError) as e:
        return [CheckResult("required.d", Status.FAILED, f"cannot list {REQUIRED_DIR}: {e}")]
    results = []
    for entry in names:
        path = os.path.join(directory, entry)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode) or not st.st_mode & 0o111 or entry.startswith("."):
            continue
        results.append(_run_check(root, entry, _timeout_of(path, settings.check_timeout)))
    return results


def _timeout_of(path: str, default: float) -> float:
    try:
        with open(path + ".timeout", encoding="ascii") as f:
            value = float(f.read(32).strip())
    except (OSError, ValueError, UnicodeDecodeError):
        return default
    return value if 0 < value <= 86400 else default


def _run_check(root: Root, entry: str, timeout: float) -> CheckResult:
    node_path = f"{REQUIRED_DIR}/{entry}"
    name = f"required.d/{printable(entry)}"
    if root.path != "/" and root.exists("/bin/sh"):
        argv = ["chroot", root.path, node_path]
    else:
        argv = [root.host_path(node_path)]
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "MCD_ROOT": root.path, "LANG": "C.UTF-8"}
    start = _monotonic()
    with tempfile.TemporaryFile() as out:
        try:
            proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                env=env, start_new_session=True, cwd="/",
            )  # fmt: skip
        except OSError as e:
            return CheckResult(name, Status.FAILED, f"cannot run: {e.strerror or e}")
        try:
            code = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # the check's own process group
            proc.wait()
            code = None
        seconds = _monotonic() - start
        text = _output(out)
    if code is None:
        note = f"timed out after {timeout:g}s" + (f": {text}" if text else "")
        return CheckResult(name, Status.FAILED, note, seconds)
    if code != 0:
        note = f"exit status {code}" + (f": {text}" if text else "")
        return CheckResult(name, Status.FAILED, note, seconds)
    return CheckResult(name, Status.PASSED, "", seconds)


def _output(f: IO[bytes]) -> str:
    """The head and the tail of the check's output are enough for a summary."""
    f.seek(0, os.SEEK_END)
    size = f.tell()
    f.seek(0)
    head = f.read(min(size, OUTPUT_KEEP))
    tail = b""
    if size > 2 * OUTPUT_KEEP:
        f.seek(size - OUTPUT_KEEP)
        tail = b"\n...\n" + f.read(OUTPUT_KEEP)
    elif size > OUTPUT_KEEP:
        tail = f.read()
    return summarize((head + tail).decode("utf-8", "replace"))
