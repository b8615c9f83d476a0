"""Real nodes for the tests: ``../shared/realnode`` (its README has the commands and limits).

Each node is a Debian root booted with systemd as PID 1 in ``systemd-nspawn``, running a real
kubelet and containerd, joined to a real kube-apiserver. :class:`RealNodes` drives the kit's
``realnode.sh``: ``up`` (the control plane and a scheduler), ``node-up``, ``load`` (an image
tarball into a node's containerd), ``exec`` (a command inside a node) and, always at the end,
``down`` (everything stopped by its pid, the host restored; ``--purge`` unless
``REALNODE_KEEP=1``, which keeps the logs). Only one such cluster runs per host at a time.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.patience import patient

REPO = Path(__file__).resolve().parents[2]
Obj = dict[str, Any]
REFUSED = 4
"""``realnode.sh up``'s exit code while another realnode cluster is up on this host."""


def kit() -> Path | None:
    """``$REALNODE_KIT``, else ``shared/realnode`` beside the checkout (or any parent's)."""
    explicit = os.environ.get("REALNODE_KIT")
    if explicit:
        return Path(explicit).resolve()
    for parent in REPO.parents:
        candidate = parent / "shared" / "realnode"
        if (candidate / "realnode.sh").is_file():
            return candidate.resolve()
    return None


def unavailable() -> str | None:
    """Why real nodes cannot run here (one line: the kit's own reason), or None."""
    if os.environ.get("MCD_TEST_REAL_NODES") == "0":
        return "turned off by MCD_TEST_REAL_NODES=0"
    where = kit()
    if where is None or not (where / "realnode.sh").is_file():
        return f"no realnode kit ({where or 'shared/realnode beside the checkout'}/realnode.sh)"
    env = {k: v for k, v in os.environ.items() if k != "REALNODE_STATE"}
    check = subprocess.run([str(where / "realnode.sh"), "check"], capture_output=True,
                           text=True, env=env, check=False, timeout=300)  # fmt: skip
    if check.returncode == 0:
        return None
    lines = (check.stderr or check.stdout).strip().splitlines()
    return lines[-1] if lines else f"realnode.sh check exited {check.returncode}"


INOTIFY_LIMIT = Path("/proc/sys/fs/inotify/max_user_instances")
NODE_INOTIFY = 40
"""inotify instances a booting node takes (its systemd, journald, logind, containerd, and the
kubelet's file watchers), with margin."""


def inotify_in_use() -> int:
    """The inotify instances this user's processes hold: the kernel's limit
    (``max_user_instances``, 128 by default) counts them across every container."""
    uid, count = os.getuid(), 0
    for fds in Path("/proc").glob("[0-9]*/fd"):
        try:
            if fds.stat().st_uid != uid:
                continue
            for fd in os.scandir(fds):
                with contextlib.suppress(OSError):
                    count += os.readlink(fd.path) == "anon_inode:inotify"
        except OSError:
            continue
    return count


def await_inotify_room(need: int = NODE_INOTIFY, timeout: float = 300) -> None:
    """Before a node boots: wait (up to ``timeout``) until ``need`` inotify instances are free.
    Beside the real-cluster stage (API servers, agents, systemd containers come and go), a
    node booted into a full table gets a kubelet that cannot watch its CA file and a containerd
    without its CRI plugin; this waits for room instead. Gives up silently: the boot then says
    what failed."""
    try:
        limit = int(INOTIFY_LIMIT.read_text())
    except (OSError, ValueError):
        return
    deadline = time.monotonic() + timeout
    while limit - inotify_in_use() < need and time.monotonic() < deadline:
        time.sleep(2)


def _out_of_inotify(text: str) -> bool:
    return "too many open files" in text and "fsnotify" in text


class KitError(AssertionError):
    """A kit command or kubectl failed (its output attached)."""


class RealNodes:
    """A realnode cluster: the control plane, nodes by name, kubectl against it."""

    def __init__(self, workdir: Path) -> None:
        where = kit()
        assert where is not None
        self.script = str(where / "realnode.sh")
        self.workdir = workdir
        self.env: dict[str, str] = {k: v for k, v in os.environ.items()
                                    if k not in ("REALNODE_STATE", "KUBECONFIG")}  # fmt: skip
        self.nodes: list[str] = []
        self.timings: dict[str, float] = {}

    # -- the kit ---------------------------------------------------------------------------
    def run(self, *args: str, check: bool = True, timeout: float = 600,
            stdin: str | None = None) -> subprocess.CompletedProcess[str]:  # fmt: skip
        done = subprocess.run([self.script, *args], capture_output=True, text=True,
                              env=self.env, input=stdin, timeout=timeout, check=False)  # fmt: skip
        if check and done.returncode != 0:
            raise KitError(f"realnode.sh {' '.join(args)} -> {done.returncode}\n"
                           f"{done.stdout[-2000:]}\n{done.stderr[-3000:]}")  # fmt: skip
        return done

    def up(self, wait_for_other: float = 1800) -> None:
        """The control plane and a scheduler. Only one realnode cluster runs per host: while
        another run's is up (``up`` refuses with exit 4), wait for it to go down, up to
        ``wait_for_other`` seconds."""
        start = time.monotonic()
        while True:
            attempt = time.monotonic()
            done = self.run("up", check=False, timeout=1200)
            if done.returncode != REFUSED or time.monotonic() - start > wait_for_other:
                break
            time.sleep(10)
        for line in done.stdout.splitlines():
            key, sep, value = line.removeprefix("export ").partition("=")
            if sep and key.isupper():
                self.env[key] = value.strip("'\"")
        if done.returncode != 0:
            raise KitError(f"realnode.sh up -> {done.returncode}\n{done.stderr[-3000:]}")
        self.timings["up"] = time.monotonic() - attempt

    def node_up(self, name: str) -> None:
        """Boot ``name`` once there is room for it; a boot that ran out of inotify instances
        all the same (the table filled while it booted) is taken down and tried once more."""
        start = time.monotonic()
        await_inotify_room()
        done = self.run("node-up", name, check=False)
        if done.returncode != 0 and _out_of_inotify(done.stdout + done.stderr):
            self.run("node-down", name, check=False)
            await_inotify_room(2 * NODE_INOTIFY)
            done = self.run("node-up", name, check=False)
        if done.returncode != 0:
            raise KitError(f"realnode.sh node-up {name} -> {done.returncode}\n"
                           f"{done.stdout[-2000:]}\n{done.stderr[-3000:]}")  # fmt: skip
        self.nodes.append(name)
        self.timings[f"node-up {name}"] = time.monotonic() - start

    def load(self, tarball: Path) -> None:
        for node in self.nodes:
            self.run("load", node, str(tarball))

    def exec(self, node: str, *argv: str, check: bool = True,
             stdin: str | None = None) -> subprocess.CompletedProcess[str]:  # fmt: skip
        """A command inside ``node`` (all its namespaces: its root, its systemd)."""
        return self.run("exec", node, *argv, check=check, stdin=stdin, timeout=120)

    def exits(self, node: str) -> list[str]:
        """One line per exit of the node's container (a reboot: code 133)."""
        path = Path(self.env["REALNODE_STATE"]) / "nodes" / node / "exits"
        return path.read_text().splitlines() if path.exists() else []

    def down(self) -> None:
        if "REALNODE_STATE" not in self.env:
            return
        purge = [] if os.environ.get("REALNODE_KEEP") else ["--purge"]
        self.run("down", *purge, check=False, timeout=600)

    # -- the API ---------------------------------------------------------------------------
    def kubectl(self, *args: str, check: bool = True, stdin: str | None = None,
                timeout: float = 180) -> subprocess.CompletedProcess[str]:  # fmt: skip
        argv = ["kubectl", f"--cache-dir={self.workdir / 'kubectl-cache'}", *args]
        done = subprocess.run(argv, capture_output=True, text=True, env=self.env, input=stdin,
                              timeout=timeout, check=False)  # fmt: skip
        if check and done.returncode != 0:
            raise KitError(f"kubectl {' '.join(args)} -> {done.returncode}\n{done.stderr[-3000:]}")
        return done

    def get(self, *args: str) -> Obj:
        found: Obj = json.loads(self.kubectl("get", "-o", "json", *args).stdout)
        return found

    def node(self, name: str) -> Obj:
        return self.get("node", name)

    def annotations(self, node: str) -> dict[str, str]:
        found: dict[str, str] = self.node(node)["metadata"].get("annotations") or {}
        return found


def wait(
    what: Callable[[], object], timeout: float, message: str, *logs: Callable[[], str]
) -> None:
    """Until ``what()`` is true, or fail after ``timeout`` seconds with the logs' tails."""
    timeout = patient(timeout)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if what():
            return
        time.sleep(1.0)
    if what():
        return
    tails = "\n".join(log()[-4000:] for log in logs)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {message}\n{tails}")
