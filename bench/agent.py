"""``mcd start`` benchmarks: idle footprint and desiredConfig-to-Done latency.

The agent runs as a real subprocess (the e2e harness) against the fake API
server. Baselines, measured in the same run:

* idle: a minimal watcher, the official client's ``Watch().stream(list_node)``
  on the same node with the same field selector, idle beside the agent for the
  same 60 s;
* latency: a minimal in-process script that does the same work for the same
  update: GET the MachineConfig, decode and atomically write the same 100
  files (fsync each), and PATCH ``currentConfig``+``state=Done``.
"""

from __future__ import annotations

import base64
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path

from bench.common import Row, print_table, ratio_check
from bench.host import minimal_atomic_write
from mcd.cluster.node import annotations_of
from mcd.model.vocabulary import Annotation
from tests.builders import file_entry
from tests.e2e.configs import worker
from tests.e2e.harness import AgentNode, create_config
from tests.fakes.kubecluster import TestCluster

IDLE_SECONDS = float(os.environ.get("MCD_BENCH_IDLE_SECONDS", "60"))
IDLE_RSS_MB = 50.0
"""The upstream DaemonSet's memory request for the daemon container."""
IDLE_RSS_LOAD_RATIO = 1.0
"""``make test``: idle RSS no more than the minimal watcher's (load does not change memory)."""
UPDATE_RATIO = 2.0
"""``make bench``: a 100-file rebootless update within this many times the minimal script."""
UPDATE_LOAD_RATIO = 20.0
"""``make test``: the same, with headroom for a loaded machine. The baseline is in-process and
tiny (70 ms for 100 files), while the agent's update carries fixed costs that load stretches
(a watch event to wake it, the policies read, MachineConfigNode status writes, validation of
every managed path before Done): 6x missed on a busy 2-core CI machine at 6.2x. This check
catches an order-of-magnitude regression; the real target (2x) is ``make bench``'s."""
CLK_TCK = os.sysconf("SC_CLK_TCK")

MINIMAL_WATCHER = """
import sys
from kubernetes import client, config, watch
api = client.CoreV1Api(config.new_client_from_config(config_file=sys.argv[1]))
print("ready", flush=True)
while True:
    for _ in watch.Watch().stream(api.list_node, field_selector="metadata.name=" + sys.argv[2],
                                  timeout_seconds=300):
        pass
"""


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime + stime


def _files(n: int, tag: str) -> list[dict[str, object]]:
    return [file_entry(f"/etc/bench/d{i % 10}/f{i}.conf", f"{tag} {i}\n" * 200) for i in range(n)]


def _boot(cluster: TestCluster, workdir: Path, files: int) -> tuple[AgentNode, list[str]]:
    """A node whose agent runs as the DaemonSet's does: on its service account, over HTTPS
    to the server the host's kubelet kubeconfig names (the cluster is ``tls=True``)."""
    node = AgentNode(cluster, workdir / "node", in_cluster=True)
    names = [cluster.name(f"rendered-bench-{i}") for i in range(2)]
    docs = [
        worker(names[0], extra_files=_files(files, "a")),
        worker(names[1], extra_files=_files(files, "a"), secret='{"auths":{"b":{"auth":"Yg=="}}}'),
    ]
    for doc in docs:
        create_config(cluster, doc)
    node.provision(docs[0])
    first: dict[str, str | None] = {
        Annotation.CURRENT_CONFIG: names[0],
        Annotation.DESIRED_CONFIG: names[0],
    }
    cluster.annotate(node.name, {**first, Annotation.STATE: "Done"})
    node.start()
    node.wait_ready(60)
    return node, names


def bench_idle(workdir: Path, seconds: float | None = None) -> list[Row]:
    """RSS and CPU of an idle ``mcd start`` beside the minimal watcher, over ``seconds``."""
    seconds = IDLE_SECONDS if seconds is None else seconds
    workdir.mkdir(parents=True, exist_ok=True)
    cluster = TestCluster(workdir, tls=True)
    node, _ = _boot(cluster, workdir, files=10)
    watcher = subprocess.Popen(
        [sys.executable, "-c", MINIMAL_WATCHER, str(cluster.kubeconfig), node.name],
        stdout=subprocess.PIPE,
    )
    try:
        assert watcher.stdout is not None
        watcher.stdout.readline()
        assert node.proc is not None
        pids = (node.proc.pid, watcher.pid)
        cpu0 = [cpu_seconds(p) for p in pids]
        time.sleep(seconds)
        cpu = [cpu_seconds(p) - c for p, c in zip(pids, cpu0, strict=True)]
        rss = [rss_mb(p) for p in pids]
    finally:
        watcher.kill()
        watcher.wait()
        node.close()
        cluster.close()
    # make test: RSS as a ratio to the minimal watcher (load does not change memory), CPU as
    # a share of the wall time (a sleeping process's CPU time does not grow with load).
    rss_text, rss_ok = ratio_check(rss[0], rss[1], IDLE_RSS_LOAD_RATIO)
    cpu_share = cpu[0] / seconds
    return [
        Row(f"idle RSS of mcd start after {seconds:.0f} s", rss[0], rss[1],
            f"<= {IDLE_RSS_MB:.0f} MB", rss[0] <= IDLE_RSS_MB, unit="MB",
            load_target=rss_text, load_passed=rss_ok),
        Row(f"CPU seconds while idle for {seconds:.0f} s", cpu[0], cpu[1],
            f"< {seconds / 100:g} s (1% of a core)", cpu_share < 0.01, unit="s",
            load_target="< 3% of a core", load_passed=cpu_share < 0.03),
    ]  # fmt: skip


def _minimal_update(cluster: TestCluster, node: str, name: str, root: str) -> None:
    """The baseline: what a minimal script must do for the same update."""
    obj = cluster.kube.request(
        "GET", f"/apis/machineconfiguration.openshift.io/v1/machineconfigs/{name}"
    )
    for f in obj["spec"]["config"]["storage"]["files"]:
        source = f["contents"]["source"]
        header, _, payload = source.partition(",")
        data = (
            base64.b64decode(payload)
            if header.endswith(";base64")
            else urllib.parse.unquote_to_bytes(payload)
        )
        minimal_atomic_write(root, f["path"], data, f.get("mode", 0o644))
    cluster.annotate(node, {Annotation.CURRENT_CONFIG: name, Annotation.STATE: "Done"})


def bench_update_latency(workdir: Path, files: int = 100, rounds: int = 5) -> Row:
    workdir.mkdir(parents=True, exist_ok=True)
    cluster = TestCluster(workdir, tls=True)
    node, names = _boot(cluster, workdir, files)
    done = threading.Event()
    target = [""]

    def watch_done() -> None:
        while not done.is_set():
            a = annotations_of(cluster.get_node(node.name))
            if a.get(Annotation.STATE) == "Done" and a.get(Annotation.CURRENT_CONFIG) == target[0]:
                return
            time.sleep(0.005)

    agent_times, base_times = [], []
    try:
        for i in range(rounds):
            target[0] = names[(i + 1) % 2]
            start = time.perf_counter()
            node.set_desired(target[0])
            watch_done()
            agent_times.append(time.perf_counter() - start)
            with tempfile.TemporaryDirectory() as root:
                start = time.perf_counter()
                _minimal_update(cluster, node.name, target[0], root)
                base_times.append(time.perf_counter() - start)
        assert node.reboots_requested() == 0, "a rebootless update must not reboot"
    finally:
        done.set()
        node.close()
        cluster.close()
        if os.environ.get("MCD_BENCH_LOG"):
            print(node.log())
    figure, base = statistics.median(agent_times), statistics.median(base_times)
    limit = 1.0 if files <= 100 else 3.0
    wanted, passed = f"< {limit * 1000:.0f} ms", figure < limit
    if files <= 100:
        ratio_text, ratio_ok = ratio_check(figure, base, UPDATE_RATIO)
        wanted, passed = f"{wanted}, {ratio_text}", passed and ratio_ok
    load_target, load_passed = ratio_check(figure, base, UPDATE_LOAD_RATIO)
    return Row(f"desiredConfig -> Done, rebootless, {files} files", figure, base,
               wanted, passed, load_target=load_target, load_passed=load_passed)  # fmt: skip


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        rows = [bench_update_latency(Path(tmp) / "latency"), *bench_idle(Path(tmp) / "idle")]
    print_table(rows)
    print(json.dumps({r.name: r.figure for r in rows}))


if __name__ == "__main__":
    main()
