"""A rollout across three nodes, the way the machine-config controller drives one with
``maxUnavailable: 1``: desiredConfig moves to the next node only once the previous one is
Done on the new config and schedulable again. The update needs a reboot, so every node is
drained of real pods: three replicas of a workload under a PodDisruptionBudget
(``minAvailable: 2``) that a test-side controller keeps at three replicas, rescheduling an
evicted pod onto a schedulable node, as a ReplicaSet and the scheduler would.

A monitor follows every Node and pod change through watches: at no moment are two nodes
cordoned, and the workload never has fewer live replicas than its budget allows.
"""

from __future__ import annotations

import itertools
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from mcd.cluster.api import Kube, load_client
from mcd.model.vocabulary import Annotation
from tests.e2e.configs import worker
from tests.e2e.conftest import NodeFactory
from tests.e2e.harness import AgentNode, create_config
from tests.fakes.kubecluster import TestCluster

Obj = dict[str, Any]
REPLICAS, MIN_AVAILABLE = 3, 2
LABELS = {"app": "web"}


def cordoned(node: Obj) -> bool:
    return bool(node.get("spec", {}).get("unschedulable"))


def live_pods(cluster: TestCluster, namespace: str) -> list[Obj]:
    listing = cluster.kube.request(
        "GET", f"/api/v1/namespaces/{namespace}/pods", {"labelSelector": "app=web"}
    )
    return [p for p in listing["items"] if not p["metadata"].get("deletionTimestamp")]


@dataclass
class Workload:
    """The ReplicaSet and the scheduler: keeps REPLICAS pods, placed on schedulable nodes."""

    cluster: TestCluster
    namespace: str
    nodes: list[str]
    serial: itertools.count[int] = field(default_factory=itertools.count)
    rescheduled: int = 0

    def reconcile(self) -> None:
        pods = live_pods(self.cluster, self.namespace)
        for _ in range(REPLICAS - len(pods)):
            load = {n: 0 for n in self.nodes if not cordoned(self.cluster.get_node(n))}
            for p in pods:
                if p["spec"]["nodeName"] in load:
                    load[p["spec"]["nodeName"]] += 1
            target = min(load, key=lambda n: load[n])
            self.cluster.pod(self.namespace, f"web-{next(self.serial)}", target, labels=LABELS)
            self.rescheduled += 1
            pods = live_pods(self.cluster, self.namespace)


class Monitor:
    """Follows every change the API server serialises (watches on Nodes and on the
    workload's pods, resumed by resourceVersion): what maxUnavailable and the budget promise
    is checked after each event, so no intermediate state can slip between two samples."""

    def __init__(self, cluster: TestCluster, namespace: str, nodes: list[str]) -> None:
        self.kube = Kube(load_client(str(cluster.kubeconfig)))
        self.namespace, self.nodes = namespace, set(nodes)
        self.cordoned: dict[str, bool] = {}
        self.live: dict[str, bool] = {}
        self.max_cordoned, self.min_ready, self.events = 0, REPLICAS, 0
        self.overlaps: list[list[str]] = []

    def run(self, stop: threading.Event, errors: list[BaseException]) -> list[threading.Thread]:
        feeds = [
            ("/api/v1/nodes", {"labelSelector": "mcd-test=true"}, self._node),
            (f"/api/v1/namespaces/{self.namespace}/pods", {"labelSelector": "app=web"}, self._pod),
        ]
        threads = []
        for path, query, handle in feeds:
            listing = self.kube.request("GET", path, query)
            for obj in listing["items"]:
                handle(obj)
            rv = listing["metadata"]["resourceVersion"]
            self.min_ready = sum(self.live.values()) if self.live else self.min_ready
            thread = threading.Thread(
                target=self._follow, args=(path, query, rv, handle, stop, errors), daemon=True
            )
            thread.start()
            threads.append(thread)
        return threads

    def _follow(self, path: str, query: Obj, rv: str, handle: Any,
                stop: threading.Event, errors: list[BaseException]) -> None:  # fmt: skip
        try:
            while not stop.is_set():
                stream = {**query, "resourceVersion": rv, "timeoutSeconds": 1,
                          "allowWatchBookmarks": "true"}  # fmt: skip
                for event in self.kube.stream(path, stream, timeout=10):
                    rv = event["object"]["metadata"]["resourceVersion"]
                    if event["type"] == "BOOKMARK":
                        continue
                    if event["type"] == "DELETED":
                        event["object"]["metadata"]["deletionTimestamp"] = "gone"
                    handle(event["object"])
        except BaseException as e:  # surfaced by the test, not lost in a thread
            errors.append(e)

    def _node(self, node: Obj) -> None:
        name = node["metadata"]["name"]
        if name not in self.nodes:
            return
        self.cordoned[name] = cordoned(node)
        down = sorted(n for n, c in self.cordoned.items() if c)
        self.max_cordoned = max(self.max_cordoned, len(down))
        if len(down) > 1:
            self.overlaps.append(down)
        self.events += 1

    def _pod(self, pod: Obj) -> None:
        self.live[pod["metadata"]["name"]] = not pod["metadata"].get("deletionTimestamp")
        self.min_ready = min(self.min_ready, sum(self.live.values()))
        self.events += 1


def run_in_background(
    step: Any, stop: threading.Event, interval: float, errors: list[BaseException]
) -> threading.Thread:
    def loop() -> None:
        while not stop.is_set():
            try:
                step()
            except BaseException as e:  # surfaced by the test, not lost in a thread
                errors.append(e)
                return
            stop.wait(interval)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    return thread


def update_one(node: AgentNode, config: str, timeout: float = 90.0) -> None:
    """Move one node to ``config``: set desiredConfig, reboot it when it asks, wait for Done
    and uncordoned (what the controller waits for before the next node)."""
    node.set_desired(config)
    node.wait_reboot(1, timeout)
    assert cordoned(node.node()), "the node must be cordoned before it reboots"
    node.reboot()
    node.wait_for(
        lambda: (
            node.annotations().get(Annotation.STATE) == "Done"
            and node.annotations().get(Annotation.CURRENT_CONFIG) == config
            and not cordoned(node.node())
        ),
        timeout,
        f"{node.name} Done on {config} and uncordoned",
    )


def test_three_node_rollout_one_at_a_time_with_drains(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    old, new = kube_cluster.name("rendered-worker-1"), kube_cluster.name("rendered-worker-2")
    create_config(kube_cluster, worker(old))
    create_config(kube_cluster, worker(new, app="threads=8\n"))  # a file change: reboot
    nodes = [make_node(base) for base in ("worker-a", "worker-b", "worker-c")]
    for node in nodes:
        node.provision(worker(old))
        kube_cluster.annotate(node.name, {Annotation.CURRENT_CONFIG: old,
                                          Annotation.DESIRED_CONFIG: old,
                                          Annotation.STATE: "Done"})  # fmt: skip
        node.start()
    names = [n.name for n in nodes]
    ns = kube_cluster.namespace()
    for i, name in enumerate(names):
        kube_cluster.pod(ns, f"web-init-{i}", name, labels=LABELS)
    kube_cluster.pdb(ns, "web-pdb", LABELS, min_available=MIN_AVAILABLE)
    for node in nodes:
        node.wait_ready()
        node.wait_state("Done", old)

    workload = Workload(kube_cluster, ns, names)
    monitor = Monitor(kube_cluster, ns, names)
    stop: threading.Event = threading.Event()
    errors: list[BaseException] = []
    threads = [run_in_background(workload.reconcile, stop, 0.05, errors)]
    threads += monitor.run(stop, errors)
    started = time.monotonic()
    try:
        for node in nodes:  # maxUnavailable 1: the next node only once this one is back
            update_one(node, new)
            assert not errors, errors
    finally:
        stop.set()
        for thread in threads:
            thread.join(10)
    took = time.monotonic() - started

    assert not errors, errors
    for node in nodes:
        a = node.annotations()
        assert (a[Annotation.STATE], a[Annotation.CURRENT_CONFIG]) == ("Done", new)
        assert a[Annotation.DESIRED_CONFIG] == new
        assert node.current_on_disk() == new
        assert node.path("/etc/app/app.conf").read_text() == "threads=8\n"
        assert node.reboots_requested() == 1
        node.wait_events("Drain")
        node.wait_events("Reboot")
    assert monitor.events >= 3 * 4, "the monitor must have seen every cordon and eviction"
    assert monitor.max_cordoned == 1, f"two nodes cordoned at once: {monitor.overlaps[:3]}"
    assert monitor.min_ready >= MIN_AVAILABLE
    assert workload.rescheduled >= len(nodes), "every drain must have evicted a real pod"
    assert len(live_pods(kube_cluster, ns)) == REPLICAS
    print(f"\nrollout of 3 nodes: {took:.1f} s, {monitor.events} watch events, "
          f"max cordoned {monitor.max_cordoned}, min ready {monitor.min_ready}/{REPLICAS}, "
          f"{workload.rescheduled} pods rescheduled")  # fmt: skip
