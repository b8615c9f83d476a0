"""E2e pieces for ``mcd controller``: the controller as a real subprocess, pools, labelled nodes,
a rebooter that boots agents whose update asked for a reboot, and a replay of every Node
version the API server stored to check ``maxUnavailable`` at each step (no sampling)."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from mcd.cluster.api import Kube, load_client
from mcd.cluster.configs import MACHINECONFIGS
from mcd.cluster.informer import Informer
from mcd.cluster.pools import POOLS
from mcd.model.pool.rollout import condition
from mcd.model.vocabulary import Annotation
from tests.e2e.harness import REPO, AgentNode, free_port
from tests.fakes.apiserver import FakeApiServer
from tests.fakes.apiserver.cluster import NODES
from tests.fakes.kubecluster import TestCluster
from tests.patience import patient

Obj = dict[str, Any]
ROLE = "machineconfiguration.openshift.io/role"
NODE_ROLE = "node-role.kubernetes.io/"


class ControllerProc:
    def __init__(self, cluster: TestCluster, workdir: Path, identity: str, namespace: str) -> None:
        self.cluster = cluster
        self.identity = identity
        self.namespace = namespace
        self.port = free_port()
        self.log_path = workdir / f"controller-{identity}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, *extra: str) -> ControllerProc:
        args = [
            sys.executable,
            "-m",
            "mcd",
            "controller",
            "--kubeconfig",
            str(self.cluster.kubeconfig),
            "--metrics-url",
            f"127.0.0.1:{self.port}",
            "--namespace",
            self.namespace,
            "--lease-duration",
            "3",
            "--resync",
            "1",
            *extra,
        ]
        env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "HOSTNAME": self.identity}
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env)
        log.close()
        return self

    def stop(self, sig: int = signal.SIGTERM) -> int | None:
        if self.proc is None or self.proc.poll() is not None:
            return None if self.proc is None else self.proc.returncode
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(5)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def get(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=5) as r:
                return int(r.status), r.read().decode()
        except urllib.error.HTTPError as e:
            return int(e.code), e.read().decode()
        except (urllib.error.URLError, OSError) as e:
            return 0, str(e)

    def metric(self, name: str) -> float:
        _, text = self.get("/metrics")
        for line in text.splitlines():
            if line.startswith(name + " ") or line.startswith(name + "{"):
                return float(line.rsplit(" ", 1)[1])
        return float("nan")


def machine_config(name: str, role: str, doc: Obj) -> Obj:
    """A user's MachineConfig from a test config document, labelled for ``role``."""
    out = {k: v for k, v in doc.items() if k != "metadata"}
    out.update(apiVersion="machineconfiguration.openshift.io/v1", kind="MachineConfig")
    out["metadata"] = {"name": name, "labels": {ROLE: role}}
    return out


def pool(
    name: str,
    roles: Iterable[str],
    node_label: str,
    max_unavailable: object = None,
    paused: bool = False,
    annotations: dict[str, str] | None = None,
) -> Obj:
    spec: Obj = {
        "machineConfigSelector": {
            "matchExpressions": [{"key": ROLE, "operator": "In", "values": list(roles)}]
        },
        "nodeSelector": {"matchLabels": {NODE_ROLE + node_label: ""}},
        "paused": paused,
    }
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    return {
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfigPool",
        "metadata": {"name": name, "annotations": annotations or {}},
        "spec": spec,
    }


def create_pool(cluster: TestCluster, doc: Obj) -> None:
    cluster.create(POOLS, doc)


def get_pool(cluster: TestCluster, name: str) -> Obj:
    return cluster.kube.request("GET", f"{POOLS}/{name}")


def patch_pool(cluster: TestCluster, name: str, patch: Obj) -> None:
    cluster.kube.request(
        "PATCH", f"{POOLS}/{name}", body=patch, content_type="application/merge-patch+json"
    )


def label_node(cluster: TestCluster, node: str, *roles: str) -> None:
    labels = {NODE_ROLE + r: "" for r in roles}
    cluster.kube.request(
        "PATCH",
        f"/api/v1/nodes/{node}",
        body={"metadata": {"labels": labels}},
        content_type="application/merge-patch+json",
    )


def pool_condition(cluster: TestCluster, name: str, kind: str) -> Obj:
    found = condition((get_pool(cluster, name).get("status") or {}).get("conditions") or [], kind)
    return dict(found or {})


def target(cluster: TestCluster, name: str) -> str:
    return str(
        ((get_pool(cluster, name).get("spec") or {}).get("configuration") or {}).get("name") or ""
    )


def wait(check: Callable[[], bool], timeout: float, what: str, *logs: Callable[[], str]) -> None:
    timeout = patient(timeout)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    if check():
        return
    tails = "\n".join(f"--- log ---\n{log()[-4000:]}" for log in logs)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}\n{tails}")


def boot_on_rendered(cluster: TestCluster, node: AgentNode, rendered: str) -> None:
    """Install time: the node gets the pool's rendered config, then its agent starts."""
    doc = cluster.kube.request("GET", f"{MACHINECONFIGS}/{rendered}")
    node.provision(doc)
    cluster.annotate(
        node.name,
        {
            Annotation.CURRENT_CONFIG: rendered,
            Annotation.DESIRED_CONFIG: rendered,
            Annotation.STATE: "Done",
        },
    )
    node.start()


class Rebooter:
    """Reboots a node whenever its agent asked systemd for a reboot (as the harness does)."""

    def __init__(self, nodes: list[AgentNode]) -> None:
        self.nodes = nodes
        self.handled = {n.name: n.reboots_requested() for n in nodes}
        self.stop = threading.Event()
        self.errors: list[BaseException] = []
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Rebooter:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(30)

    def _run(self) -> None:
        while not self.stop.wait(0.05):
            for node in self.nodes:
                try:
                    asked = node.reboots_requested()
                    if asked > self.handled[node.name]:
                        self.handled[node.name] = asked
                        node.reboot()
                except Exception as e:  # reported by the test
                    self.errors.append(e)


def history_mark(fake: FakeApiServer) -> tuple[int, dict[str, Obj]]:
    """The store's resourceVersion now, and every Node as it is at that moment."""
    with fake.store.lock:
        nodes, rv = fake.store.select(NODES, "")
    return rv, {n["metadata"]["name"]: n for n in nodes}


def replay_unavailable(
    fake: FakeApiServer, members: dict[str, str], mark: tuple[int, dict[str, Obj]],
    unavailable: Callable[[Obj], bool] | None = None,
) -> dict[str, int]:  # fmt: skip
    """The most nodes of each pool that were unavailable at once, over every Node version the
    API server stored since ``mark``: a node counts from its desiredConfig leaving
    currentConfig (or a cordon, or a state other than Done) until it is Done and
    schedulable again (``unavailable``: another rule)."""
    rule = unavailable or _unavailable
    since, state = mark[0], dict(mark[1])
    peak = dict.fromkeys(set(members.values()), 0)
    with fake.store.lock:
        history = [c for c in fake.store.history if c.resource == "nodes" and c.rv > since]
    for change in history:
        name = change.obj["metadata"]["name"]
        if name not in members:
            continue
        state[name] = change.obj
        for pool_name in peak:
            count = sum(1 for n, obj in state.items() if members[n] == pool_name and rule(obj))
            peak[pool_name] = max(peak[pool_name], count)
    return peak


def _unavailable(node: Obj) -> bool:
    a = node["metadata"].get("annotations") or {}
    if (node.get("spec") or {}).get("unschedulable"):
        return True
    current, desired = a.get(Annotation.CURRENT_CONFIG), a.get(Annotation.DESIRED_CONFIG)
    return current != desired or a.get(Annotation.STATE) != "Done"


class NodeMonitor:
    """For a real cluster (no stored history to replay): a watch on all Nodes, the peak of
    unavailable nodes per pool computed after every event the API server sends."""

    def __init__(self, cluster: TestCluster, members: dict[str, str],
                 unavailable: Callable[[Obj], bool] | None = None) -> None:  # fmt: skip
        self.members = members
        self.unavailable = unavailable or _unavailable
        self.peak = dict.fromkeys(set(members.values()), 0)
        self.events = 0
        self.stop = threading.Event()
        self.informer = Informer(Kube(load_client(str(cluster.kubeconfig))), "/api/v1/nodes",
                                 self._changed)  # fmt: skip
        self.thread = threading.Thread(target=self.informer.run, args=(self.stop,), daemon=True)

    def __enter__(self) -> NodeMonitor:
        self.thread.start()
        self.informer.synced.wait(30)
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()

    def _changed(self, _kind: str, _obj: Obj) -> None:
        self.events += 1
        nodes = {n["metadata"]["name"]: n for n in self.informer.items()}
        for pool_name in self.peak:
            count = sum(1 for n, obj in nodes.items()
                        if self.members.get(n) == pool_name and self.unavailable(obj))  # fmt: skip
            self.peak[pool_name] = max(self.peak[pool_name], count)
