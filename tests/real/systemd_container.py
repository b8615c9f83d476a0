"""A real systemd: PID 1 of a ``systemd-nspawn`` container, its system bus reachable from the host.

The container boots a copy of a cached Debian rootfs of the host's own release (so ``busctl``
and ``systemctl`` here match the systemd in there). Its ``/run/dbus`` is bind-mounted from a
host directory beside the root, and the root's own ``run/dbus`` (hidden inside the container
under its ``/run`` tmpfs) is a symlink to that directory, so the node's system bus sits where
mcd looks for it in the DaemonSet: ``<root>/run/dbus/system_bus_socket``, with ``<root>`` the
host path of the container's ``/``. Unit files mcd writes under ``<root>/etc/systemd/system`` are the
files that systemd reads.

A reboot inside the container ends ``systemd-nspawn`` with exit code 133; :meth:`boot` again is
the next boot. :meth:`run` runs a command inside the running container (``nsenter`` into the
namespaces and root of its PID 1, with a clean environment), as an admin's shell on the node
would; ``bind_ro`` host paths appear read-only at the same paths inside.

The rootfs carries Debian's ``python3`` (the host's release: the same minor version as the
host's Python there) so that mcd itself can run inside, from the checkout bound read-only.
The cached rootfs is keyed by what makes it (:data:`RECIPE`): a changed package list builds a
new one (once per machine, 70-120 s) beside the old, never under a container that runs. Every container runs in cgroups of its own (created beside the caller's, removed
on stop) and is stopped by the pid of its ``systemd-nspawn``: SIGTERM is a clean poweroff of
the guest, SIGKILL the fallback.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

from tests.nodes.kit import await_inotify_room
from tests.patience import patient
from tests.real import cgroups
from tests.real.cache import debootstrap, host_suite, locked, missing

CONTAINER_INOTIFY = 16
"""inotify instances a booting container takes (systemd, journald, logind, its bus), with margin."""

REBOOT_EXIT = 133
# python3: mcd runs inside (tests/real/test_try_timer.py); 38 MB more (142 MB), ~20 packages
PACKAGES = ["systemd", "systemd-sysv", "dbus", "python3"]
# GRUB's config tools (grub-mkconfig, update-grub, grub-probe, the 10_linux script) and a kernel
# image name for it to find: tests/real/test_bootloader.py (about 20 MB more)
GRUB_PACKAGES = [*PACKAGES, "grub2-common", "grub-pc-bin"]
# a quiet, deterministic guest: no timers firing mid-test, no getty on the console
QUIET = ["apt-daily.timer", "apt-daily-upgrade.timer", "e2scrub_all.timer",
         "dpkg-db-backup.timer", "console-getty.service", "fstrim.timer"]  # fmt: skip
STAMP = ".mcd-rootfs-ok"
# the cgroup hierarchies nspawn needs its own place in when the host's PID 1 is not systemd
HIERARCHIES = {"name=systemd": "/sys/fs/cgroup/systemd"}


def unavailable() -> str | None:
    """Why no systemd container can run here (None: it can)."""
    return missing("systemd-nspawn", "debootstrap", "busctl", "systemctl")


def recipe_key(packages: tuple[str, ...] | list[str] = tuple(PACKAGES), suite: str = "") -> str:
    """What the cached rootfs is made of (release, packages, masked units), as a short hash:
    the cache's name, so a changed recipe is a new build and an old checkout keeps its own."""
    recipe = "\n".join([suite or host_suite(), " ".join(packages), " ".join(QUIET)])
    return hashlib.sha256(recipe.encode()).hexdigest()[:10]


def rootfs(packages: tuple[str, ...] | list[str] = tuple(PACKAGES), suite: str = "") -> Path:
    """The cached rootfs (built once, about 100 s; concurrent callers wait for one build).
    ``packages``: another package list is another rootfs (GRUB's tools: ``GRUB_PACKAGES``);
    ``suite`` another Debian release (``trixie``: systemd 257, for soft reboots)."""
    name = f"systemd-rootfs-{recipe_key(packages, suite)}"
    with locked(name) as cache:
        root = cache / name
        if (root / STAMP).exists():
            return root
        for stale in [*cache.glob(f"{name}.tmp.*"), root]:
            shutil.rmtree(stale, ignore_errors=True)
        tmp = cache / f"{name}.tmp.{os.getpid()}"
        debootstrap(tmp, list(packages), cache / f"{name}.log", suite)
        (tmp / "etc/hostname").write_text("mcd-node\n")
        subprocess.run(
            ["systemctl", f"--root={tmp}", "mask", *QUIET], capture_output=True, check=False
        )
        (tmp / STAMP).write_text("")
        tmp.rename(root)
        return root


def _cgroup_dirs(name: str) -> list[Path]:
    """One new cgroup per hierarchy nspawn uses, beside the caller's own."""
    dirs = []
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        hid, controllers, path = line.split(":", 2)
        if controllers in HIERARCHIES:
            base = Path(HIERARCHIES[controllers])
        elif hid == "0" and not controllers:
            unified = Path("/sys/fs/cgroup/unified")
            base = unified if unified.is_dir() else Path("/sys/fs/cgroup")
        else:
            continue
        parent = base / path.lstrip("/")
        if parent.is_dir():
            dirs.append(parent / name)
    return dirs


class SystemdContainer:
    """One container; ``root`` is its ``/`` as a host path, ``address`` its system bus."""

    def __init__(
        self,
        boot_timeout: float = 90.0,
        bind_ro: tuple[Path, ...] = (),
        packages: tuple[str, ...] | list[str] = tuple(PACKAGES),
        suite: str = "",
    ) -> None:
        # short: a unix socket path holds 107 bytes, and pytest's temp dirs run long
        self.dir = Path(tempfile.mkdtemp(prefix="mcd-sd-"))
        self.root = self.dir / "root"
        self.name = f"mcd-{uuid.uuid4().hex[:10]}"
        self.boot_timeout = boot_timeout
        self.bind_ro = bind_ro
        self.console = self.dir / "console.log"
        self.exits: list[int] = []
        self.boots = 0
        self._proc: subprocess.Popen[bytes] | None = None
        self._keep_unit = not Path("/run/systemd/system").is_dir()
        self._cgroups = _cgroup_dirs(self.name) if self._keep_unit else []
        self._mounted = False
        started = time.monotonic()
        self._layer(rootfs(packages, suite))
        self.copy_seconds = time.monotonic() - started
        self.dbus_dir = self.dir / "dbus"
        self.dbus_dir.mkdir()
        (self.root / "run").mkdir(exist_ok=True)
        shutil.rmtree(self.root / "run/dbus", ignore_errors=True)
        (self.root / "run/dbus").symlink_to("../../dbus")

    def _layer(self, cached: Path) -> None:
        """The container's root: an overlay of the cached rootfs (the cache is never written),
        or a copy of it where overlayfs cannot mount."""
        upper, work = self.dir / "upper", self.dir / "work"
        for d in (self.root, upper, work):
            d.mkdir()
        options = f"lowerdir={cached},upperdir={upper},workdir={work}"
        mount = subprocess.run(
            ["mount", "-t", "overlay", "mcd-test", "-o", options, str(self.root)],
            capture_output=True, check=False,
        )  # fmt: skip
        if mount.returncode == 0:
            self._mounted = True
            return
        self.root.rmdir()
        subprocess.run(["cp", "-a", "--reflink=auto", str(cached), str(self.root)], check=True)

    @property
    def socket(self) -> Path:
        return self.dbus_dir / "system_bus_socket"

    @property
    def address(self) -> str:
        return f"unix:path={self.socket}"

    # -- lifecycle --------------------------------------------------------------------------

    def boot(self) -> float:
        """Boot (or boot again) and wait until systemd reports running; seconds it took."""
        assert not self.running, "already running"
        await_inotify_room(CONTAINER_INOTIFY)  # systemd and its bus each need instances
        self.socket.unlink(missing_ok=True)
        for d in self._cgroups:
            d.mkdir(exist_ok=True)
        argv = [
            "systemd-nspawn", "--quiet", f"--directory={self.root}", "--boot",
            f"--machine={self.name}", "--register=no", "--private-network",
            "--link-journal=no", "--resolv-conf=off", "--timezone=off",
            "--console=read-only", f"--bind={self.dbus_dir}:/run/dbus",
            *(f"--bind-ro={path}" for path in self.bind_ro),
            *(["--keep-unit"] if self._keep_unit else []),
        ]  # fmt: skip
        # the wrapper moves itself into the container's own cgroups, then becomes nspawn
        wrapper = (
            'for d in $MCD_CGROUPS; do echo $$ >"$d/cgroup.procs" || exit 125; done; exec "$@"'
        )
        env = dict(os.environ, MCD_CGROUPS=" ".join(str(d) for d in self._cgroups))
        started = time.monotonic()
        with self.console.open("ab") as log:
            log.write(f"--- boot {self.boots + 1} ---\n".encode())
            log.flush()
            self._proc = subprocess.Popen(
                ["sh", "-c", wrapper, "sh", *argv],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
                start_new_session=True,
            )  # fmt: skip
        self.boots += 1
        deadline = started + patient(self.boot_timeout)
        while (state := self.system_state()) not in ("running", "degraded"):
            if not self.running:
                raise RuntimeError(f"container exited during boot:\n{self.console_tail()}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"boot timed out (state {state!r}):\n{self.console_tail()}")
            time.sleep(0.1)
        return time.monotonic() - started

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def poll(self) -> int | None:
        """The exit code if the container has ended on its own (recorded in ``exits``)."""
        if self._proc is not None and self._proc.poll() is not None:
            self._ended(self._proc.returncode)
        return None if self.running or not self.exits else self.exits[-1]

    def wait_exit(self, timeout: float = 60.0) -> int:
        """Wait for the container to end on its own (a reboot or poweroff inside); its exit code."""
        assert self._proc is not None
        code = self._proc.wait(timeout)
        self._ended(code)
        return code

    def _ended(self, code: int) -> None:
        if self._proc is not None:
            self._proc = None
            self.exits.append(code)
            self.socket.unlink(missing_ok=True)

    def stop(self, timeout: float = 30.0) -> None:
        """Clean poweroff (SIGTERM to nspawn), SIGKILL if it hangs; cgroups removed."""
        proc = self._proc
        if proc is not None:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(10)
            self._ended(proc.returncode)
        for d in self._cgroups:  # nspawn --keep-unit leaves payload/ and supervisor/ behind
            if d.is_dir():
                cgroups.remove_empty(d)

    def close(self) -> None:
        self.stop()
        if self._mounted:
            umount = subprocess.run(["umount", str(self.root)], capture_output=True, check=False)
            if umount.returncode != 0:  # never delete through a mount that is still there
                subprocess.run(
                    ["umount", "--lazy", str(self.root)], capture_output=True, check=True
                )
            self._mounted = False
        shutil.rmtree(self.dir, ignore_errors=True)

    # -- looking in -------------------------------------------------------------------------

    def leader(self) -> int:
        """The host pid of the container's PID 1 (systemd)."""
        assert self._proc is not None and self.running, "not running"
        nspawn = self._proc.pid
        children = Path(f"/proc/{nspawn}/task/{nspawn}/children").read_text().split()
        assert len(children) == 1, f"systemd-nspawn {nspawn} has children {children}"
        return int(children[0])

    def run(
        self, *argv: str, env: dict[str, str] | None = None, timeout: float = 120.0
    ) -> subprocess.CompletedProcess[str]:
        """``argv`` inside the container: its mounts, root, pid, ipc, uts and network
        namespaces, an environment of ``PATH`` and ``env`` only."""
        clean = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                 "LANG": "C.UTF-8", **(env or {})}  # fmt: skip
        enter = ["nsenter", f"--target={self.leader()}", "--mount", "--uts", "--ipc", "--net",
                 "--pid", "--root", "--wd"]  # fmt: skip
        return subprocess.run(
            [*enter, "env", "-i", *(f"{k}={v}" for k, v in clean.items()), *argv],
            capture_output=True, text=True, check=False, timeout=timeout,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip

    def console_tail(self, chars: int = 3000) -> str:
        return self.console.read_text(errors="replace")[-chars:] if self.console.exists() else ""

    def busctl(self, *args: str, check: bool = True) -> str:
        result = subprocess.run(
            ["busctl", f"--address={self.address}", "--timeout=5", *args],
            capture_output=True, text=True, check=False, timeout=30,
        )  # fmt: skip
        if check and result.returncode != 0:
            raise RuntimeError(f"busctl {' '.join(args)}: {result.stderr.strip()}")
        return result.stdout.strip()

    def system_state(self) -> str:
        if not self.socket.exists():
            return ""
        out = self.busctl(
            "get-property", "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
            "org.freedesktop.systemd1.Manager", "SystemState", check=False,
        )  # fmt: skip
        return out.removeprefix("s ").strip('"')

    def unit_property(self, unit: str, name: str, interface: str = "Unit") -> str:
        """A property of a loaded unit as systemd reports it (``busctl`` value, type stripped)."""
        path = self.busctl(
            "call", "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
            "org.freedesktop.systemd1.Manager", "LoadUnit", "s", unit,
        ).split(None, 1)[1].strip('"')  # fmt: skip
        out = self.busctl(
            "get-property", "org.freedesktop.systemd1", path,
            f"org.freedesktop.systemd1.{interface}", name,
        )  # fmt: skip
        return out.split(None, 1)[1].strip('"') if " " in out else ""
