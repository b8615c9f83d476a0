"""``mcd controller`` at fleet scale on a real kube-apiserver: ``python -m bench.fleet``
(``make fleet``; not part of ``make test``).

A throw-away etcd + kube-apiserver (``../shared/realcluster``, no kube-controller-manager, so
Nodes no kubelet renews stay Ready) holds ``MCD_FLEET_NODES`` (5,000) Ready Nodes in one pool
with ``maxUnavailable: 10%``. Simulated agents (one watch on all Nodes in this process) finish
an update ``MCD_FLEET_UPDATE_SECONDS`` (5 s) after a node's ``desiredConfig`` changes, with one
write of ``currentConfig`` and ``state: Done``. Then:

1. ``mcd controller`` (a subprocess) rolls out two new MachineConfigs, one after the other;
   each wall time runs from the MachineConfig's creation to the pool's ``Updated`` on it;
2. the controller stops and a minimal pacer (in this process: hands the new config to the next
   node the moment fewer than ``maxUnavailable`` are in flight, its writes on
   :data:`PACER_THREADS` threads, nothing else) rolls a third config out to the same nodes on
   the same server: the baseline.

Reported beside the ideal (waves x update time) and the pacer: wall time per rollout, the
peak number of unavailable nodes (replayed in order from the watch stream: every event, no
sampling), how long a free slot waits on average (a node Done to the next node's target: the
pace's overhead, beside the pacer's), the controller's peak RSS (``VmHWM``), its CPU per node
update, and its requests per node update (the API server's ``apiserver_request_total`` over
the rollouts, minus this process's own requests, which it counts). Targets (issue 46): each
rollout within 1.15x the pacer, never more than ``maxUnavailable`` out, the controller at most
150 MiB and 1.5 ms of CPU per node update; beside that figure, the CPU the pacer's writer
threads took per Node write in the same run (the floor of the same client on the machine of
that minute: an absolute CPU figure moves by a fifth between runs on a shared VM).
``MCD_FLEET_PYSPY=FILE`` profiles the controller (``MCD_FLEET_PYSPY_BIN``: a py-spy elsewhere
than beside this Python).
"""

from __future__ import annotations

import collections
import contextlib
import heapq
import math
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

from bench.common import Row, print_table, progress
from mcd.cluster.api import ApiError, Kube, load_client
from mcd.cluster.configs import MACHINECONFIGS
from mcd.cluster.pools import NODES, POOLS
from mcd.model.pool.render import ROLE_LABEL, render
from mcd.model.vocabulary import Annotation
from tests.e2e.harness import REPO, free_port
from tests.fakes.realcluster import ThrowAwayCluster, ensure_binaries

N = int(os.environ.get("MCD_FLEET_NODES", "5000"))
UPDATE = float(os.environ.get("MCD_FLEET_UPDATE_SECONDS", "5"))
PERCENT = 10
PACER_THREADS = 32
"""The minimal pacer writes its targets on 32 threads (issue 46)."""
NODE_ROLE = "node-role.kubernetes.io/worker"
MERGE = "application/merge-patch+json"
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"

Obj = dict[str, Any]


class CountingKube(Kube):
    """This process's requests, counted (to take them out of the server's total)."""

    count = 0
    _lock = threading.Lock()

    def request(self, *args: Any, **kwargs: Any) -> Obj:
        with self._lock:
            CountingKube.count += 1
        return super().request(*args, **kwargs)

    def stream(self, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            CountingKube.count += 1
        return super().stream(*args, **kwargs)


def machine_config(name: str, text: str) -> Obj:
    files = [{"path": f"/etc/fleet/{name}", "contents": {"source": f"data:,{text}"},
              "mode": 420}]  # fmt: skip
    return {
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": {"name": name, "labels": {ROLE_LABEL: "worker"}},
        "spec": {"config": {"ignition": {"version": "3.4.0"}, "storage": {"files": files}}},
    }


class Fleet:
    """One watch on every Node: the simulated agents, the unavailable count (every event, in
    order) and the pacer's wake-ups."""

    def __init__(self, kube: Kube) -> None:
        self.kube = kube
        self.nodes: dict[str, tuple[str, str, str, bool]] = {}  # current, desired, state, cordon
        self.unavailable: set[str] = set()
        self.peak = 0
        self.events = 0
        self.changed = threading.Condition()
        self.stop = threading.Event()
        self._due: list[tuple[float, str, str]] = []
        self._scheduled: dict[str, str] = {}
        self._lock = threading.Lock()
        self._writers = ThreadPoolExecutor(max_workers=8, thread_name_prefix="agent")
        self._rv = ""
        self.refills: list[float] = []
        self._freed: collections.deque[float] = collections.deque()
        self.on: collections.Counter[str] = collections.Counter()
        """Nodes by their current config (the pacer's count of those in flight, in O(1))."""

    def start(self) -> None:
        listing = self.kube.request("GET", NODES)
        for node in listing.get("items") or []:
            self._take(node)
        self._rv = str(listing["metadata"]["resourceVersion"])
        threading.Thread(target=self._watch, daemon=True).start()
        threading.Thread(target=self._agents, daemon=True).start()

    def reset_peak(self) -> None:
        with self._lock:
            self.peak = len(self.unavailable)
            self.refills, self._freed = [], collections.deque()

    def refill(self) -> float:
        """Mean seconds from a node's Done (its slot free) to the next node's target."""
        with self._lock:
            return statistics.mean(self.refills) if self.refills else 0.0

    def _watch(self) -> None:
        while not self.stop.is_set():
            query = {"resourceVersion": self._rv, "allowWatchBookmarks": True,
                     "timeoutSeconds": 3600}  # fmt: skip
            try:
                for event in self.kube.stream(NODES, query, timeout=3700):
                    obj = event.get("object") or {}
                    self._rv = str((obj.get("metadata") or {}).get("resourceVersion") or self._rv)
                    if event.get("type") in ("ADDED", "MODIFIED"):
                        self._take(obj)
                    if self.stop.is_set():
                        return
            except ApiError as e:
                progress(f"node watch ended ({e}); resuming")

    def _take(self, node: Obj) -> None:
        meta = node["metadata"]
        a = meta.get("annotations") or {}
        name = meta["name"]
        current, desired = (
            a.get(Annotation.CURRENT_CONFIG, ""),
            a.get(Annotation.DESIRED_CONFIG, ""),
        )
        state = a.get(Annotation.STATE, "")
        cordon = bool((node.get("spec") or {}).get("unschedulable"))
        with self._lock:
            self.events += 1
            before = self.nodes.get(name)
            if before is not None and before[1] != desired and desired != current and self._freed:
                self.refills.append(time.monotonic() - self._freed.popleft())  # a slot refilled
            if name in self.unavailable and current == desired and state == "Done" and not cordon:
                self._freed.append(time.monotonic())
            if before is not None:
                self.on[before[0]] -= 1
            self.on[current] += 1
            self.nodes[name] = (current, desired, state, cordon)
            if current != desired or state != "Done" or cordon:
                self.unavailable.add(name)
            else:
                self.unavailable.discard(name)
            self.peak = max(self.peak, len(self.unavailable))
            if desired and desired != current and self._scheduled.get(name) != desired:
                self._scheduled[name] = desired
                heapq.heappush(self._due, (time.monotonic() + UPDATE, name, desired))
            elif current == desired:
                self._scheduled.pop(name, None)
        with self.changed:
            self.changed.notify_all()

    def _agents(self) -> None:
        """Each simulated agent: ``UPDATE`` seconds after its desiredConfig changed, Done."""
        while not self.stop.is_set():
            now = time.monotonic()
            ready = []
            with self._lock:
                while self._due and self._due[0][0] <= now:
                    ready.append(heapq.heappop(self._due))
            for _, name, config in ready:
                self._writers.submit(self._done, name, config)
            time.sleep(0.01)

    def _done(self, name: str, config: str) -> None:
        patch = {"metadata": {"annotations": {Annotation.CURRENT_CONFIG: config,
                                              Annotation.STATE: "Done"}}}  # fmt: skip
        with contextlib.suppress(ApiError):
            self.kube.request("PATCH", f"{NODES}/{name}", body=patch, content_type=MERGE)

    def not_on(self, config: str, names: set[str]) -> int:
        """How many of ``names`` are not yet on ``config`` (every node on it is one of them:
        a config only the pacer hands out)."""
        with self._lock:
            return len(names) - self.on[config]

    def all_on(self, config: str) -> bool:
        with self._lock:
            return all(c == config and s == "Done" for c, _d, s, _u in self.nodes.values())


def pace(fleet: Fleet, kube: Kube, target: str, limit: int) -> tuple[float, float]:
    """The minimal pacer's rollout to ``target``: its wall time, and the CPU its writer
    threads took per Node write (the same client's floor on this machine, that minute: the
    baseline beside the controller's CPU per node update)."""
    queue = sorted(fleet.nodes)
    writers = ThreadPoolExecutor(max_workers=PACER_THREADS, thread_name_prefix="pacer")
    handed: set[str] = set()
    spent = [0.0]
    lock = threading.Lock()

    def write(name: str, body: Obj) -> None:
        began = time.thread_time()
        kube.request("PATCH", f"{NODES}/{name}", body=body, content_type=MERGE)
        took = time.thread_time() - began
        with lock:
            spent[0] += took

    start = time.monotonic()
    while True:
        in_flight = fleet.not_on(target, handed)
        finished = len(handed) == len(queue) and in_flight == 0
        if finished:
            break
        while in_flight < limit and len(handed) < len(queue):
            name = queue[len(handed)]
            handed.add(name)
            in_flight += 1
            body = {"metadata": {"annotations": {Annotation.DESIRED_CONFIG: target}}}
            writers.submit(write, name, body)
        with fleet.changed:
            fleet.changed.wait(0.2)
    writers.shutdown()
    return time.monotonic() - start, spent[0] / max(1, len(queue))


def server_requests(kube: Kube) -> float:
    """Every request the API server has counted (``apiserver_request_total``)."""
    auth = kube.api.authorization()
    headers = {"Authorization": auth} if auth else {}
    text = kube.api.pool.request("GET", f"{kube.api.host}/metrics", headers=headers).data.decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("apiserver_request_total{"))  # fmt: skip


def controller_passes(metrics: str) -> float:
    """``mcd_controller_syncs_total`` from the controller's /metrics (loopback: no token)."""
    with urllib.request.urlopen(f"http://{metrics}/metrics", timeout=30) as response:
        text = response.read().decode()
    return next(float(line.split()[1]) for line in text.splitlines()
                if line.startswith("mcd_controller_syncs_total "))  # fmt: skip


def kernel_share(pid: int) -> float:
    """The share of a process's CPU so far spent in the kernel (system time)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    user, system = int(fields[11]), int(fields[12])
    return system / max(1, user + system)


def proc_usage(pid: int) -> tuple[float, float]:
    """(CPU seconds, peak RSS in MiB) of a process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    hwm = next(line for line in Path(f"/proc/{pid}/status").read_text().splitlines()
               if line.startswith("VmHWM:"))  # fmt: skip
    return cpu, int(hwm.split()[1]) / 1024


def profiler(pid: int) -> subprocess.Popen[bytes] | None:
    """With ``MCD_FLEET_PYSPY=FILE``: py-spy samples the controller's thread that holds the GIL
    (its Python CPU) over the rollouts (100 Hz, without stopping it) into FILE (collapsed
    stacks)."""
    out = os.environ.get("MCD_FLEET_PYSPY")
    if not out:
        return None
    spy = os.environ.get("MCD_FLEET_PYSPY_BIN") or Path(sys.executable).parent / "py-spy"
    args = ["record", "--pid", str(pid), "--nonblocking", "--gil", "-r", "100", "-f", "raw"]
    return subprocess.Popen([str(spy), *args, "-o", out], stdout=subprocess.DEVNULL)


def wait_for(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout:.0f} s")
        time.sleep(0.25)


def install(kube: Kube) -> None:
    for name in ("01-machineconfig-crd.yaml", "04-machineconfigpool-crd.yaml"):
        doc = yaml.safe_load((REPO / "daemonset" / "kubernetes" / name).read_text())
        kube.request("POST", CRD_PATH, body=doc)
        path = f"{CRD_PATH}/{doc['metadata']['name']}"
        wait_for(lambda p=path: _established(kube, p), 60, f"CRD {name}")  # type: ignore[misc]
    wait_for(lambda: _served(kube), 60, "CRDs served")


def _established(kube: Kube, path: str) -> bool:
    conditions = (kube.request("GET", path).get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


def _served(kube: Kube) -> bool:
    try:
        kube.request("GET", POOLS)
        kube.request("GET", MACHINECONFIGS)
    except ApiError:
        return False
    return True


def create_nodes(kube: Kube, config: str) -> None:
    ready = [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]

    def one(i: int) -> None:
        kube.request("POST", NODES, body={
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": f"fleet-{i:05d}", "labels": {NODE_ROLE: ""},
                         "annotations": {Annotation.CURRENT_CONFIG: config,
                                         Annotation.DESIRED_CONFIG: config,
                                         Annotation.STATE: "Done"}},
            "status": {"conditions": ready},
        })  # fmt: skip

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(one, range(N)))


def pool_on(kube: Kube, config: str) -> bool:
    status = kube.request("GET", f"{POOLS}/worker").get("status") or {}
    return (status.get("configuration") or {}).get("name") == config and any(
        c.get("type") == "Updated" and c.get("status") == "True"
        for c in status.get("conditions") or []
    )


def target_of(kube: Kube) -> str:
    pool = kube.request("GET", f"{POOLS}/worker")
    return str(((pool.get("spec") or {}).get("configuration") or {}).get("name") or "")


def main() -> None:
    ensure_binaries()
    limit = max(1, N * PERCENT // 100)
    waves = math.ceil(N / limit)
    ideal = waves * UPDATE
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        cluster = ThrowAwayCluster(work / "kas", kcm=False).start()
        ctl: subprocess.Popen[bytes] | None = None
        fleet: Fleet | None = None
        try:
            kube = CountingKube(load_client(str(cluster.kubeconfig)), timeout=60)
            install(kube)
            kube.request("POST", "/api/v1/namespaces",
                         body={"apiVersion": "v1", "kind": "Namespace",
                               "metadata": {"name": "mcd"}})  # fmt: skip
            base = machine_config("00-worker", "base")
            kube.request("POST", MACHINECONFIGS, body=base)
            first = render("worker", [base]).name
            kube.request("POST", POOLS, body={
                "apiVersion": "machineconfiguration.openshift.io/v1",
                "kind": "MachineConfigPool", "metadata": {"name": "worker"},
                "spec": {"machineConfigSelector": {"matchLabels": {ROLE_LABEL: "worker"}},
                         "nodeSelector": {"matchLabels": {NODE_ROLE: ""}},
                         "maxUnavailable": f"{PERCENT}%"},
            })  # fmt: skip
            t = time.monotonic()
            create_nodes(kube, first)
            progress(f"{N} Ready nodes created in {time.monotonic() - t:.1f} s")
            fleet = Fleet(kube)
            fleet.start()
            log = (work / "controller.log").open("wb")
            metrics = f"127.0.0.1:{free_port()}"
            ctl = subprocess.Popen(
                [sys.executable, "-m", "mcd", "controller", "--kubeconfig",
                 str(cluster.kubeconfig), "--metrics-url", metrics,
                 "--namespace", "mcd"],
                stdout=log, stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONPATH": str(REPO)},
            )  # fmt: skip
            cluster.guard(ctl.pid, "controller")
            wait_for(lambda: pool_on(kube, first), 300, "the pool Updated on its first config")
            progress("controller started; the pool is Updated")
            walls, peaks, refills = [], [], []
            passes0 = controller_passes(metrics)  # a scrape (its CPU outside the rollouts')
            cpu0, rss0 = proc_usage(ctl.pid)
            progress(f"controller after its first sync: {cpu0:.1f} s CPU, peak RSS {rss0:.1f} MiB")
            spy = profiler(ctl.pid)
            served0, mine0 = server_requests(kube), CountingKube.count
            for name in ("50-fleet-a", "50-fleet-b"):
                before = target_of(kube)
                fleet.reset_peak()
                t = time.monotonic()
                kube.request("POST", MACHINECONFIGS, body=machine_config(name, name))
                wait_for(lambda b=before: target_of(kube) not in ("", b), 120, "render")  # type: ignore[misc]
                new = target_of(kube)
                wait_for(lambda c=new: pool_on(kube, c), 3600, f"rollout of {name}")  # type: ignore[misc]
                walls.append(time.monotonic() - t)
                peaks.append(fleet.peak)
                refills.append(fleet.refill())
                progress(f"rollout {name}: {walls[-1]:.1f} s, peak unavailable {fleet.peak}, "
                         f"a free slot waited {refills[-1]:.2f} s on average")  # fmt: skip
            cpu1, rss = proc_usage(ctl.pid)
            progress(f"controller CPU in the kernel: {100 * kernel_share(ctl.pid):.0f}%")
            if spy is not None:
                spy.send_signal(signal.SIGINT)
                spy.wait(60)
            served = server_requests(kube) - served0 - (CountingKube.count - mine0) - 1
            passes = controller_passes(metrics) - passes0
            ctl.send_signal(signal.SIGTERM)
            ctl.wait(60)
            ctl = None
            wait_for(lambda: fleet is not None and fleet.all_on(new), 60, "settled")
            fleet.reset_peak()
            pacer, pacer_cpu = pace(fleet, kube, "rendered-worker-pacer", limit)
            pacer_peak, pacer_refill = fleet.peak, fleet.refill()
            progress(f"pacer: {pacer:.1f} s, peak unavailable {pacer_peak}, "
                     f"a free slot waited {pacer_refill:.2f} s on average, "
                     f"{pacer_cpu * 1000:.2f} ms of CPU a write")  # fmt: skip
        finally:
            if fleet is not None:
                fleet.stop.set()
            if ctl is not None:
                ctl.terminate()
                ctl.wait(60)
            cluster.stop()

    updates = 2 * N
    cpu_ms = (cpu1 - cpu0) / updates
    per_update = served / updates
    print(f"{N} nodes, maxUnavailable {PERCENT}% = {limit}: {waves} waves x {UPDATE:g} s "
          f"= ideal {ideal:.1f} s; minimal pacer {pacer:.1f} s (peak unavailable {pacer_peak}); "
          f"{fleet.events} node events replayed")  # fmt: skip
    rows = [
        Row(f"rollout {i + 1} wall vs minimal pacer", w, pacer, "<= 1.15x pacer", w <= 1.15 * pacer)
        for i, w in enumerate(walls)
    ]
    rows += [
        Row(f"rollout {i + 1} wall vs ideal", w, ideal, "(report only)", True)
        for i, w in enumerate(walls)
    ]
    rows += [
        Row(f"rollout {i + 1} wait of a free slot", r, pacer_refill, "(report only)", True)
        for i, r in enumerate(refills)
    ]
    rows += [
        Row(
            f"rollout {i + 1} peak unavailable nodes",
            float(p),
            float(limit),
            f"<= {limit}",
            p <= limit,
            unit="",
        )
        for i, p in enumerate(peaks)
    ]
    rows += [
        Row("controller peak RSS", rss, 150.0, "<= 150 MiB", rss <= 150, unit="MB"),
        Row("controller CPU per node update", cpu_ms, 0.0015, "<= 1.5 ms", cpu_ms <= 0.0015),
        Row(
            "controller CPU per node update vs pacer's per write",
            cpu_ms,
            pacer_cpu,
            "(report only)",
            True,
        ),
        Row(
            "controller passes per node update",
            passes / updates,
            1.0,
            "(report only)",
            True,
            unit="",
        ),
        Row(
            "controller CPU per pass vs time between passes",
            (cpu1 - cpu0) / max(1, passes),
            sum(walls) / max(1, passes),
            "(report only)",
            True,
        ),
        Row(
            "controller requests per node update",
            per_update,
            3.0,
            "<= 3",
            per_update <= 3,
            unit="req",
        ),
    ]
    print_table(rows)
    sys.exit(0 if all(r.passed for r in rows) else 1)


if __name__ == "__main__":
    main()
