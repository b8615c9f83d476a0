"""Scale: N ``mcd start`` agents (processes, 50 by default) against one API server.

``python -m bench.scale`` (``make scale``). The fake API server runs in this process, so
its CPU time is the server-side cost. Every agent has its own node root (a plain host: no
ostree, no systemd manager, unit files through ``systemctl --root``). Phases:

1. baseline: ``MCD_SCALE_BASELINE`` (5) minimal watchers, the official client's
   ``Watch().stream(list_node)`` with its 300 s timeout, idle for the same window;
2. idle: N agents, Done, watching their Nodes for ``MCD_SCALE_IDLE_SECONDS`` (60 s);
   requests and server CPU are counted per client, and open watch streams are read
   off the server;
3. one watch cycle: the server ends every watch cleanly once (as its timeout would); the
   requests each client makes to resume are counted. Requests per idle hour are the
   window's rate plus cycles per hour (agents: timeouts 300-600 s, mean 450 s; the
   minimal watcher: 300 s) times requests per cycle;
4. update: every agent gets a new desiredConfig at once (a rebootless SSH key change);
   requests, server CPU and the time until the last node is Done. The baseline is the
   minimal script's update (GET the MachineConfig, PATCH the Node). The agent's writes to
   its MachineConfigNode and its Events (upstream's, the same reasons) are counted apart
   (the minimal script keeps neither).

Then the figures are extrapolated to 5,000 nodes.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.agent import MINIMAL_WATCHER, rss_mb
from bench.common import Row, print_table
from mcd.agent.commands.once import node_for, once_from
from mcd.cluster.api import USER_AGENT
from mcd.cluster.node import annotations_of
from mcd.host.rootfs import Root
from mcd.host.runner import Runner
from mcd.host.systemd.offline import OfflineSystemd
from mcd.model.vocabulary import Annotation
from tests.e2e.configs import KEY_B, worker
from tests.e2e.harness import REPO, create_config, free_port, make_root
from tests.fakes.kubecluster import TEST_USER_AGENT, TestCluster

AGENTS = int(os.environ.get("MCD_SCALE_AGENTS", "50"))
BASELINE = int(os.environ.get("MCD_SCALE_BASELINE", "5"))
IDLE = float(os.environ.get("MCD_SCALE_IDLE_SECONDS", "60"))
UPSTREAM_INFORMERS = 7
"""The watches upstream's daemon holds (cmd/machine-config-daemon/start.go): Nodes,
MachineConfigs, ControllerConfigs, MachineConfigPools, MachineConfigurations,
PinnedImageSets, InternalReleaseImages; client-go re-opens each every 5-10 minutes (about 8
requests an hour each). mcd's agent holds its Node, its ControllerConfig (certificates)
and, where the cluster serves them, MachineConfigPools and PinnedImageSets (pinned
images)."""
UPSTREAM_EVENTS = 6
"""Events upstream's daemon records for a rebootless update (ConfigDriftMonitorStopped,
AddSigtermProtection, SkipReboot, RemoveSigtermProtection, NodeDone,
ConfigDriftMonitorStarted): counted apart from the agent's other requests."""
TARGET_NODES = 5000
AGENT_CYCLE_SECONDS = 450.0  # mean of the agent's jittered 300-600 s watch timeouts
MINIMAL_CYCLE_SECONDS = 300.0  # the minimal watcher's fixed timeout_seconds


class ScaleNode:
    """One agent on a plain host root; no D-Bus, no rpm-ostree."""

    def __init__(
        self, cluster: TestCluster, workdir: Path, index: int, config: dict[str, Any]
    ) -> None:
        self.root = workdir / f"node-{index}"
        make_root(self.root)
        (self.root / "run/ostree-booted").unlink()  # a plain Kubernetes host
        root = Root(self.root)
        source = workdir / f"{config['metadata']['name']}.json"
        if not source.exists():
            source.write_text(json.dumps(config))
        once_from(str(source), node_for(root, OfflineSystemd(root, Runner())), skip_reboot=True)
        self.name = cluster.node(f"scale-{index:03d}")
        name = config["metadata"]["name"]
        cluster.annotate(self.name, {Annotation.CURRENT_CONFIG: name,
                                     Annotation.DESIRED_CONFIG: name,
                                     Annotation.STATE: "Done"})  # fmt: skip
        self.port = free_port()
        self.log_path = workdir / f"agent-{index}.log"
        self.log = self.log_path.open("wb")
        skip = ("NOTIFY_SOCKET", "KUBECONFIG", "DBUS_SYSTEM_BUS_ADDRESS")
        env = {k: v for k, v in os.environ.items() if k not in skip}
        env.update(PYTHONPATH=str(REPO), DBUS_SYSTEM_BUS_ADDRESS="unix:path=/nonexistent")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mcd", "start", "--node-name", self.name,
             "--root-mount", str(self.root), "--kubeconfig", str(cluster.kubeconfig),
             "--metrics-url", f"127.0.0.1:{self.port}", "--no-kubelet-healthz"],
            stdout=self.log, stderr=subprocess.STDOUT, env=env,
        )  # fmt: skip

    def ready(self) -> bool:
        try:
            url = f"http://127.0.0.1:{self.port}/readyz"
            with urllib.request.urlopen(url, timeout=2) as r:
                return int(r.status) == 200
        except OSError:
            return False

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def wait_until(check: Callable[[], bool], timeout: float, what: str) -> float:
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if check():
            return time.monotonic() - start
        time.sleep(0.1)
    raise TimeoutError(f"{what} not reached in {timeout} s")


def counted(cluster: TestCluster, user_agent: str, since: int) -> tuple[int, int]:
    """(requests that are not watches, watch requests) from a client since log index."""
    assert cluster.fake is not None
    reqs = [r for r in cluster.fake.requests[since:] if r.user_agent.startswith(user_agent)]
    return sum(not r.watch for r in reqs), sum(r.watch for r in reqs)


def server_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def idle_phase(
    cluster: TestCluster, clients: int, user_agent: str, cycle: float
) -> dict[str, float]:
    """Requests and server CPU over the idle window, then one forced watch cycle."""
    fake = cluster.fake
    assert fake is not None
    mark, cpu0 = len(fake.requests), server_cpu()
    time.sleep(IDLE)
    cpu = server_cpu() - cpu0
    plain, watches = counted(cluster, user_agent, mark)
    open_watches = sum(n for ua, n in fake.watching.items() if ua.startswith(user_agent))
    mark = len(fake.requests)
    fake.end_watches()
    time.sleep(5)  # every client resumes
    per_cycle = sum(counted(cluster, user_agent, mark)) / clients
    per_hour = (plain + watches) / clients * 3600 / IDLE + 3600 / cycle * per_cycle
    return {
        "per_hour": per_hour,
        "per_cycle": per_cycle,
        "open_watches": open_watches / clients,
        "cpu_ms_per_hour": cpu / clients * 3600 / IDLE * 1000,
    }


def minimal_update(cluster: TestCluster, node: str, config: str) -> None:
    cluster.kube.request(
        "GET", f"/apis/machineconfiguration.openshift.io/v1/machineconfigs/{config}"
    )
    cluster.annotate(node, {Annotation.CURRENT_CONFIG: config, Annotation.STATE: "Done"})


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        cluster = TestCluster(work)
        fake = cluster.fake
        assert fake is not None, "the scale bench runs against the fake API server"
        fake.bookmark_interval = 60.0  # as a real API server (about once a minute)
        v1, v2 = cluster.name("rendered-scale-1"), cluster.name("rendered-scale-2")
        # plain hosts (no rpm-ostree, no bootc) cannot take an OS image: the configs set none
        doc1 = worker(v1, image="")
        create_config(cluster, doc1)
        create_config(cluster, worker(v2, key=KEY_B, image=""))  # an SSH key: no drain, no reboot
        nodes: list[ScaleNode] = []
        watchers: list[subprocess.Popen[bytes]] = []
        try:
            # 1. baseline: minimal watchers
            base_node = cluster.node("minimal")
            for _ in range(BASELINE):
                watchers.append(subprocess.Popen(
                    [sys.executable, "-c", MINIMAL_WATCHER, str(cluster.kubeconfig), base_node],
                    stdout=subprocess.PIPE))  # fmt: skip
            for w in watchers:
                assert w.stdout is not None
                w.stdout.readline()
            time.sleep(2)
            minimal = idle_phase(cluster, BASELINE, "OpenAPI-Generator", MINIMAL_CYCLE_SECONDS)
            minimal_rss = sum(rss_mb(w.pid) for w in watchers) / BASELINE
            for w in watchers:
                w.kill()
                w.wait()
            watchers.clear()

            # 2-3. N agents, idle
            started = time.monotonic()
            for i in range(AGENTS):
                nodes.append(ScaleNode(cluster, work, i, doc1))
            wait_until(lambda: all(n.ready() for n in nodes), 300, f"{AGENTS} agents ready")
            boot = time.monotonic() - started
            time.sleep(2)
            agents = idle_phase(cluster, AGENTS, USER_AGENT, AGENT_CYCLE_SECONDS)
            agent_rss = sum(rss_mb(n.proc.pid) for n in nodes) / AGENTS
            peak_watches = fake.peak_watches

            # 4. everyone updates at once
            mark, cpu0 = len(fake.requests), server_cpu()
            t0 = time.monotonic()
            for n in nodes:
                cluster.annotate(n.name, {Annotation.DESIRED_CONFIG: v2})

            last_seen: list[tuple[str | None, str | None]] = []
            laggards: list[str] = []

            def all_done() -> bool:
                listing = cluster.kube.request("GET", "/api/v1/nodes",
                                               {"labelSelector": "mcd-test=true"})  # fmt: skip
                pairs = [
                    (a.get(Annotation.STATE), a.get(Annotation.CURRENT_CONFIG))
                    for a in map(annotations_of, listing["items"])
                ]
                last_seen[:] = pairs
                laggards[:] = [
                    i["metadata"]["name"] for i in listing["items"]
                    if (annotations_of(i).get(Annotation.STATE),
                        annotations_of(i).get(Annotation.CURRENT_CONFIG)) != ("Done", v2)
                ]  # fmt: skip
                return pairs.count(("Done", v2)) == AGENTS

            try:
                wait_until(all_done, 300, f"{AGENTS} nodes Done on {v2}")
                wave = time.monotonic() - t0
            except TimeoutError:
                print("node states at the timeout:", Counter(last_seen))
                for n in nodes:
                    if n.name in laggards:
                        log_text = n.log_path.read_text(errors="replace")
                        print(f"--- {n.name} ---\n{log_text[-3000:]}")
                raise
            time.sleep(1)  # the last events are sent in the background
            update_cpu = server_cpu() - cpu0
            plain, watches = counted(cluster, USER_AGENT, mark)
            on_mcn = sum(
                1 for r in fake.requests[mark:]
                if r.user_agent.startswith(USER_AGENT) and "/machineconfignodes" in r.path
            )  # fmt: skip
            on_events = sum(
                1 for r in fake.requests[mark:]
                if r.user_agent.startswith(USER_AGENT) and r.path.endswith("/events")
            )  # fmt: skip
            mcn_per_update = on_mcn / AGENTS
            events_per_update = on_events / AGENTS
            per_update = (plain + watches - on_mcn - on_events) / AGENTS
            if os.environ.get("MCD_SCALE_DEBUG"):
                print(Counter((r.verb, r.path.rsplit("/", 1)[0]) for r in fake.requests[mark:]
                              if r.user_agent.startswith(USER_AGENT)))  # fmt: skip
            # the minimal update, measured the same way (requests and server CPU)
            mark, cpu0 = len(fake.requests), server_cpu()
            t1 = time.monotonic()
            minimal_update(cluster, base_node, v2)
            minimal_seconds = time.monotonic() - t1
            minimal_update_cpu = server_cpu() - cpu0
            minimal_per_update = sum(counted(cluster, TEST_USER_AGENT, mark))
        finally:
            for w in watchers:
                w.kill()
            for n in nodes:
                n.stop()
            cluster.close()

    rows = [
        Row(f"idle API requests/agent/hour (N={AGENTS})", agents["per_hour"],
            minimal["per_hour"], f"< {UPSTREAM_INFORMERS * 8} req/h (upstream)",
            agents["per_hour"] < UPSTREAM_INFORMERS * 8, unit="req"),
        Row("requests to resume one watch cycle", agents["per_cycle"], minimal["per_cycle"],
            "<= 1 a watch (no relist)", agents["per_cycle"] <= agents["open_watches"],
            unit="req"),
        Row("open watch streams per agent", agents["open_watches"], minimal["open_watches"],
            f"<= {UPSTREAM_INFORMERS} (upstream)",
            agents["open_watches"] <= UPSTREAM_INFORMERS, unit="n"),
        Row("server CPU ms/agent/hour idle (fake)", agents["cpu_ms_per_hour"],
            minimal["cpu_ms_per_hour"], "<= 2x minimal watcher",
            agents["cpu_ms_per_hour"] <= 2 * max(minimal["cpu_ms_per_hour"], 1.0), unit="n"),
        Row(f"API requests/agent/update (N={AGENTS} at once)", per_update, minimal_per_update,
            "<= 8 req", per_update <= 8, unit="req"),
        # upstream's daemon records the same Events for this update (names and order)
        Row("Event requests/agent/update", events_per_update, per_update,
            f"<= {UPSTREAM_EVENTS} (upstream)", events_per_update <= UPSTREAM_EVENTS, unit="req"),
        # beside the agent's other requests in the same update: what the MCN adds
        Row("MachineConfigNode requests/agent/update", mcn_per_update, per_update,
            "<= 4 req", mcn_per_update <= 4, unit="req"),
        Row("server CPU ms/agent/update (fake)", update_cpu / AGENTS * 1000,
            minimal_update_cpu * 1000, "<= 10x minimal script",
            update_cpu / AGENTS <= 10 * max(minimal_update_cpu, 0.001), unit="n"),
        Row(f"all {AGENTS} nodes Done after desiredConfig", wave, minimal_seconds * AGENTS,
            "< 60 s", wave < 60),
        Row("agent RSS while idle", agent_rss, minimal_rss, "< 60 MB", agent_rss < 60, unit="MB"),
    ]  # fmt: skip
    print(f"{AGENTS} agents started and ready in {boot:.1f} s; peak open watches {peak_watches}")
    print_table(rows)
    all_per_update = per_update + events_per_update + mcn_per_update
    extrapolate(agents, all_per_update, update_cpu / AGENTS, agent_rss)
    sys.exit(0 if all(r.passed for r in rows) else 1)


def extrapolate(
    agents: dict[str, float], per_update: float, cpu_per_update: float, rss: float
) -> None:
    n = TARGET_NODES
    idle_rps = n * agents["per_hour"] / 3600
    print(f"\non paper, {n} nodes (linear in nodes; the agent's requests do not depend on N):")
    print(f"  idle: {idle_rps:.1f} requests/s to the API server, {n * agents['open_watches']:.0f} "
          f"watch streams (its own Node, field-selected, and the cluster-wide ones)")  # fmt: skip
    print(f"  idle server CPU on this fake: {n * agents['cpu_ms_per_hour'] / 3.6e6:.2f} cores")
    print(f"  a full rollout: {n * per_update:.0f} requests in all (Events and MCN included); "
          f"{n * cpu_per_update:.0f} CPU seconds of this fake server")  # fmt: skip
    print(f"  agent memory across the fleet: {n * rss / 1024:.0f} GiB ({rss:.0f} MB per node)")


if __name__ == "__main__":
    main()
