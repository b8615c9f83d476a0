"""End-to-end harness: ``mcd start`` as a real subprocess, one per node.

Each node has a temp root (passwd, group, shadow, ``/run/ostree-booted``, a
boot id), a private D-Bus with the fake systemd manager, and the rpm-ostree
stand-in. The cluster is the fake API server, or the real one named by
``MCD_TEST_KUBECONFIG`` (see :mod:`tests.fakes.kubecluster`). The harness acts
as the controller would: it creates MachineConfigs and sets ``desiredConfig``
through the official client. It also reboots nodes: when the agent asks
systemd for the reboot unit, the harness stops the agent, boots the staged
deployment, gives the node a new boot id and an empty ``/run``, and starts
the agent again.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcd.agent.commands.once import node_for, once_from
from mcd.cluster.configs import MACHINECONFIGS
from mcd.cluster.node import annotations_of
from mcd.host.rootfs import Root
from mcd.host.systemd.dbus import DBusSystemd
from mcd.model.vocabulary import CURRENT_CONFIG_PATH, Annotation
from tests.fakes import ostree_sysroot, rpm_ostree
from tests.fakes.bus import SystemdBus
from tests.fakes.kubecluster import TestCluster, write_kubeconfig
from tests.patience import patient

REPO = Path(__file__).resolve().parents[2]
BIN = REPO / "tests" / "fakes" / "bin"
IMAGE_A = "quay.io/openshift/os@sha256:aaaa"
IMAGE_B = "quay.io/openshift/os@sha256:bbbb"
SERVING = re.compile(r"Serving metrics, /healthz and /readyz on port (\d+)")

Obj = dict[str, Any]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def make_root(root: Path) -> None:
    (root / "etc/systemd/system").mkdir(parents=True)
    (root / "etc/passwd").write_text(
        "root:x:0:0:root:/root:/bin/bash\ncore:x:1000:1000:CoreOS Admin:/home/core:/bin/bash\n"
    )
    (root / "etc/group").write_text("root:x:0:\ncore:x:1000:\nwheel:x:10:core\n")
    (root / "etc/shadow").write_text("root:*:19000:0:99999:7:::\ncore:*:19000:0:99999:7:::\n")
    (root / "etc/shadow").chmod(0o640)
    (root / "etc/os-release").write_text(
        'NAME="Red Hat Enterprise Linux CoreOS"\nID="rhcos"\nVARIANT_ID=coreos\n'
        'VERSION_ID="9.6"\nRHEL_VERSION="9.6"\nOPENSHIFT_VERSION="4.21"\n'
    )
    (root / "home/core").mkdir(parents=True)
    (root / "run").mkdir()
    (root / "run/ostree-booted").write_text("")
    (root / "proc/sys/kernel/random").mkdir(parents=True)
    (root / "etc/machine-id").write_text(uuid.uuid4().hex + "\n")
    (root / "proc/sys/crypto").mkdir(parents=True)
    (root / "proc/sys/crypto/fips_enabled").write_text("0\n")  # as every RHCOS node has


class AgentNode:
    """One node of the e2e cluster, with its agent."""

    def __init__(
        self,
        cluster: TestCluster,
        workdir: Path,
        base: str = "node",
        drain_mode: str = "self",
        image: str = IMAGE_A,
        extra_args: tuple[str, ...] = (),
        in_cluster: bool = False,
    ) -> None:
        self.cluster = cluster
        self.in_cluster = in_cluster
        """Run as the DaemonSet does: a service account and the host's kubelet kubeconfig
        (the cluster must speak HTTPS: ``TestCluster(tls=True)``), no ``--kubeconfig``."""
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        self.root = self.make_host()
        self.new_boot_id()
        self.rpm_state = workdir / "rpm-ostree.json"
        # deployments in a real OSTree sysroot where the machine can (root, ostree installed)
        self.sysroot = workdir / "sysroot" if ostree_sysroot.available() else None
        rpm_ostree.save(self.rpm_state, rpm_ostree.new_state(image, sysroot=self.sysroot))
        self.name = cluster.node(base)
        self.drain_mode = drain_mode
        self.extra_args = extra_args
        self._ports: dict[int, int] = {}  # the agent's listener, per start (it binds port 0)
        self.log_path = workdir / "agent.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self.base_env: dict[str, str] = {}  # for every start of this node's agent

    # -- the node's host -------------------------------------------------------------------

    def make_host(self) -> Path:
        """The node's root and its systemd: a temp root and the D-Bus test service here;
        ``tests/real`` overrides it with a real systemd in a container."""
        root = self.workdir / "root"
        make_root(root)
        self.bus = SystemdBus(self.workdir / "bus", root).start()
        return root

    @property
    def bus_address(self) -> str:
        return self.bus.address

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("NOTIFY_SOCKET", "KUBECONFIG")}
        env.update(
            PATH=f"{BIN}:{env['PATH']}",
            MCD_FAKE_RPMOSTREE_STATE=str(self.rpm_state),
            MCD_TEST_PYTHON=sys.executable,
            DBUS_SYSTEM_BUS_ADDRESS=self.bus_address,
            PYTHONUNBUFFERED="1",
            PYTHONPATH=str(REPO),
        )
        pod_namespace = self.cluster.pod_namespace
        if pod_namespace:  # a real cluster: the agent runs as the DaemonSet does
            env["POD_NAMESPACE"] = pod_namespace
        env.update(self.base_env)
        env.update(extra)
        return env

    def new_boot_id(self) -> None:
        (self.root / "proc/sys/kernel/random/boot_id").write_text(str(uuid.uuid4()))

    def path(self, node_path: str) -> Path:
        return self.root / node_path.lstrip("/")

    def current_on_disk(self) -> str:
        data = json.loads(self.path(CURRENT_CONFIG_PATH).read_text())
        return str(data["metadata"]["name"])

    def rpm(self) -> dict[str, Any]:
        return rpm_ostree.load(self.rpm_state)

    def provision(self, doc: Obj) -> None:
        """Install time: the node gets its first config with ``once-from`` (no reboot)."""
        source = self.workdir / f"{doc['metadata']['name']}.json"
        source.write_text(json.dumps(doc))
        saved = {k: os.environ.get(k) for k in ("PATH", "MCD_FAKE_RPMOSTREE_STATE")}
        os.environ.update(self.env())
        client = DBusSystemd(self.bus_address)
        try:
            once_from(str(source), node_for(Root(self.root), client), skip_reboot=True)
        finally:
            client.close()
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    # -- the agent process -----------------------------------------------------------------

    def command(self, metrics_port: int | None = None) -> list[str]:
        """The ``mcd start`` command line of this node's agent."""
        if self.in_cluster:
            program = [sys.executable, "-m", "tests.e2e.in_cluster", str(self.service_account())]
            program.append("start")
        else:
            program = [sys.executable, "-m", "mcd", "start"]
            program += ["--kubeconfig", str(self.cluster.agent_kubeconfig)]
        return [
            *program,
            "--node-name", self.name,
            "--root-mount", str(self.root),
            "--drain-mode", self.drain_mode,
            "--metrics-url", f"127.0.0.1:{metrics_port or 0}",
            "--no-kubelet-healthz",
            *self.extra_args,
        ]  # fmt: skip

    def service_account(self) -> Path:
        """The agent's service account directory, and the host's kubelet kubeconfig that
        names the API server (upstream's ``overriding kubernetes api to ...``)."""
        ca = self.cluster.ca
        assert ca is not None and self.cluster.fake is not None, "in_cluster needs tls=True"
        sa = self.workdir / "serviceaccount"
        sa.mkdir(exist_ok=True)
        (sa / "token").write_text("agent-token")
        shutil.copyfile(ca, sa / "ca.crt")
        host = self.path("/etc/kubernetes/kubeconfig")
        host.parent.mkdir(parents=True, exist_ok=True)
        write_kubeconfig(host, self.cluster.fake.url)
        return sa

    def start(self, **env: str) -> None:
        assert self.proc is None or self.proc.poll() is not None
        args = self.command()
        log = self.log_path.open("ab")
        log.write(f"--- start {self.starts} ---\n".encode())
        log.flush()
        self.proc = subprocess.Popen(
            args, stdout=log, stderr=subprocess.STDOUT, env=self.env(**env)
        )
        log.close()
        self.starts += 1

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int | None:
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return None if proc is None else proc.returncode
        proc.send_signal(sig)
        try:
            return proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            return proc.wait(5)

    def kill(self) -> None:
        self.stop(signal.SIGKILL)

    @property
    def metrics_port(self) -> int:
        """The port the running agent serves ``/metrics`` on, as it logged it (0 until then).
        It binds port 0 each start: a port picked here and handed over could be taken by
        another process in between (the suite runs on several workers)."""
        start = self.starts - 1
        if start not in self._ports:
            log = self.log()
            found = SERVING.findall(log[log.rfind(f"--- start {start} ---") :])
            if not found:
                return 0
            self._ports[start] = int(found[-1])
        return self._ports[start]

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def reboots_requested(self) -> int:
        """Reboot requests systemd accepted (a refused call reboots nothing)."""
        return len([c for c in self.bus.calls("StartTransientUnit") if "failed" not in c])

    def reboot(self, boot_staged: bool = True) -> None:
        """What a reboot does to the node: the agent stops, the staged deployment boots,
        the boot id changes, ``/run`` is empty again (but for ``ostree-booted``)."""
        self.stop()
        if boot_staged:
            rpm_ostree.boot_staged(self.rpm_state)
        self.new_boot_id()
        run = self.root / "run"
        for entry in run.iterdir():
            if entry.name != "ostree-booted":
                if entry.is_dir():
                    shutil.rmtree(entry)
                else:
                    entry.unlink()
        self.start()

    # -- the node object -------------------------------------------------------------------

    def node(self) -> Obj:
        return self.cluster.get_node(self.name)

    def annotations(self) -> dict[str, str]:
        return annotations_of(self.node())

    def state(self) -> str:
        return self.annotations().get(Annotation.STATE, "")

    def reason(self) -> str:
        return self.annotations().get(Annotation.REASON, "")

    def set_desired(self, config: str) -> None:
        self.cluster.annotate(self.name, {Annotation.DESIRED_CONFIG: config})

    def wait_for(self, check: Callable[[], bool], timeout: float = 30.0, what: str = "") -> None:
        timeout = patient(timeout)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if check():
                return
            time.sleep(0.05)
        if check():
            return
        raise AssertionError(
            f"timed out after {timeout}s waiting for {what or check}; node annotations: "
            f"{self.annotations()}\n--- agent log (tail) ---\n{self.log()[-6000:]}"
        )

    def wait_state(self, state: str, config: str | None = None, timeout: float = 30.0) -> None:
        def check() -> bool:
            a = self.annotations()
            if a.get(Annotation.STATE) != state:
                return False
            return config is None or a.get(Annotation.CURRENT_CONFIG) == config

        self.wait_for(check, timeout, f"state={state} currentConfig={config}")

    def wait_reboot(self, count: int = 1, timeout: float = 30.0) -> None:
        self.wait_for(lambda: self.reboots_requested() >= count, timeout, f"{count} reboot(s)")

    def events(self, reason: str | None = None) -> list[Obj]:
        found = self.cluster.events_for(self.name)
        return [e for e in found if reason is None or e.get("reason") == reason]

    def wait_events(self, reason: str, count: int = 1, timeout: float = 30.0) -> list[Obj]:
        """The node's Events of ``reason`` once ``count`` of them are there. The agent sends
        Events in the background, in order, so an Event may land after the annotation it goes
        with (on a real server it often does): a test waits for it, as a reader would."""
        self.wait_for(
            lambda: len(self.events(reason)) >= count, timeout, f"{count} {reason} Event(s)"
        )
        return self.events(reason)

    def metrics(self) -> str:
        url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=5) as response:
            return str(response.read().decode())

    def probe(self, path: str) -> tuple[int, str]:
        if not self.metrics_port:
            return 0, "the agent is not listening yet"
        url = f"http://127.0.0.1:{self.metrics_port}{path}"
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                return int(response.status), str(response.read().decode())
        except urllib.error.HTTPError as e:
            return int(e.code), e.read().decode()
        except (urllib.error.URLError, OSError) as e:
            return 0, str(e)

    def wait_ready(self, timeout: float = 30.0) -> None:
        """The agent answers /readyz: its boot checks are done and it watches its Node."""
        self.wait_for(lambda: self.probe("/readyz")[0] == 200, timeout, "/readyz")

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.kill()
        self.bus.stop()
        if self.sysroot is not None:
            ostree_sysroot.purge(self.sysroot)


def create_config(cluster: TestCluster, doc: Obj) -> None:
    cluster.create(MACHINECONFIGS, doc)
