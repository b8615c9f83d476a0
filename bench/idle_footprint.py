"""The agents' idle API footprint on a real kube-apiserver: ``python -m bench.idle_footprint``
(``make idle-footprint``; not part of ``make test``).

A throw-away etcd + kube-apiserver (``../shared/realcluster``, no kube-controller-manager)
with the shipped CRDs and RBAC. Three windows, one after the other, each counted by the API
server itself (``apiserver_request_total`` by verb and resource, read before and after):

1. nothing but the API server (``MCD_IDLE_BACKGROUND_SECONDS``, 60 s): its own requests per
   second (its identity Lease, its endpoint reconciler), taken out of the other two windows;
2. ``MCD_IDLE_AGENTS`` (10) minimal watchers (the official client's ``Watch().stream`` of one
   Node, 300 s timeout: upstream's one Node watch) for ``MCD_IDLE_BASELINE_SECONDS`` (310 s);
3. as many ``mcd start`` agents, each Done on its own node root, for ``MCD_IDLE_SECONDS``
   (600 s) once every one is ready.

Reported per client per hour, by verb and resource (the resources a client here touches; the
API server's own informers' watch restarts are left out). The windows start together with the
clients, so periodic requests (the agent's 300-600 s watches, 200 s Lease renewals, 300 s
resyncs) are counted as often as they fall in the window: a window shorter than a period
undercounts it; 600 s holds 3 renewals, 2 resyncs and 1 watch cycle of each agent.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import yaml

from bench.agent import MINIMAL_WATCHER
from bench.common import Row, print_table, progress
from mcd.cluster.api import ApiError, Kube
from tests.e2e.configs import worker
from tests.e2e.harness import REPO, create_config
from tests.fakes.realcluster import RealClusterSession, ThrowAwayCluster, ensure_binaries

AGENTS = int(os.environ.get("MCD_IDLE_AGENTS", "10"))
WINDOW = float(os.environ.get("MCD_IDLE_SECONDS", "600"))
BASELINE_WINDOW = float(os.environ.get("MCD_IDLE_BASELINE_SECONDS", "310"))
BACKGROUND = float(os.environ.get("MCD_IDLE_BACKGROUND_SECONDS", "60"))
LABEL = re.compile(r'(\w+)="([^"]*)"')
WATCHED = {"nodes", "machineconfigs", "controllerconfigs", "machineconfigpools", "pinnedimagesets"}
"""What a client here may watch; the API server's own informers restart a watch on every
resource every 5-10 minutes (a few per window, not in the background's 60 s): left out."""
TOUCHED = WATCHED | {"leases", "machineconfignodes", "machineconfignodes/status", "events"}
POOLS = "/apis/machineconfiguration.openshift.io/v1/machineconfigpools"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"

Key = tuple[str, str]  # (verb, resource[/subresource])


def server_counts(kube: Kube) -> Counter[Key]:
    """``apiserver_request_total`` by verb and resource (this read is counted by the next)."""
    auth = kube.api.authorization()
    headers = {"Authorization": auth} if auth else {}
    text = kube.api.pool.request("GET", f"{kube.api.host}/metrics", headers=headers).data.decode()
    counts: Counter[Key] = Counter()
    for line in text.splitlines():
        if not line.startswith("apiserver_request_total{"):
            continue
        labels = dict(LABEL.findall(line.split("}", 1)[0]))
        resource = labels.get("resource") or "(non-resource)"
        if labels.get("subresource"):
            resource += "/" + labels["subresource"]
        counts[(labels.get("verb", ""), resource)] += int(float(line.rsplit(" ", 1)[1]))
    return counts


def window(kube: Kube, seconds: float) -> Counter[Key]:
    """What the API server served in ``seconds``, this process's two reads of /metrics out."""
    before = server_counts(kube)
    time.sleep(seconds)
    served = server_counts(kube)
    served.subtract(before)
    served[("GET", "(non-resource)")] -= 1
    return +served


def per_client_hour(
    served: Counter[Key], seconds: float, background: Counter[Key], bg_seconds: float, clients: int
) -> dict[Key, float]:
    """Each (verb, resource) per client per hour, the API server's own rate taken out."""
    rates = {}
    for key in set(served) | set(background):
        verb, resource = key
        if resource not in TOUCHED or (verb == "WATCH" and resource not in WATCHED):
            continue
        own = served[key] - background[key] * seconds / bg_seconds
        rate = own / clients * 3600 / seconds
        if rate > 0.05:
            rates[key] = rate
    return rates


def show(title: str, rates: dict[Key, float]) -> None:
    print(f"{title}: {sum(rates.values()):.1f} requests per client per hour")
    for (verb, resource), rate in sorted(rates.items(), key=lambda kv: -kv[1]):
        print(f"  {verb:8s} {resource:32s} {rate:6.1f}")


def pool_crd(kube: Kube) -> None:
    """The MachineConfigPool CRD (``daemonset/kubernetes/``), served."""
    doc = yaml.safe_load(
        (REPO / "daemonset" / "kubernetes" / "04-machineconfigpool-crd.yaml").read_text()
    )
    kube.request("POST", CRDS, body=doc)
    deadline = time.monotonic() + 60
    while True:
        try:
            kube.request("GET", POOLS)
            return
        except ApiError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def main() -> None:
    from bench.scale import ScaleNode, wait_until  # noqa: PLC0415  (after the env is set)
    from tests.fakes.kubecluster import TestCluster  # noqa: PLC0415

    ensure_binaries()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        cluster = ThrowAwayCluster(work / "kas", kcm=False).start()
        watchers: list[subprocess.Popen[bytes]] = []
        nodes: list[ScaleNode] = []
        try:
            os.environ["MCD_TEST_KUBECONFIG"] = str(cluster.kubeconfig)
            session = RealClusterSession(cluster.kubeconfig, work)
            session.install()
            test = TestCluster(work)
            kube = test.kube
            doc = worker(test.name("rendered-idle"), image="")  # a plain host: no OS image
            create_config(test, doc)
            pool_crd(kube)  # the agents read their pool (its PinnedImageSets)
            kube.request("POST", POOLS, body={
                "apiVersion": "machineconfiguration.openshift.io/v1",
                "kind": "MachineConfigPool", "metadata": {"name": "worker"},
                "spec": {"machineConfigSelector": {"matchLabels": {"mcd-test": "true"}},
                         "nodeSelector": {"matchLabels": {"mcd-test": "true"}}},
            })  # fmt: skip
            progress(f"background: {BACKGROUND:.0f} s with no client")
            background = window(kube, BACKGROUND)

            minimal = test.node("minimal")
            for _ in range(AGENTS):
                watchers.append(subprocess.Popen(
                    [sys.executable, "-c", MINIMAL_WATCHER, str(test.kubeconfig), minimal],
                    stdout=subprocess.PIPE))  # fmt: skip
            for w in watchers:
                assert w.stdout is not None
                w.stdout.readline()
            progress(f"{AGENTS} minimal watchers: {BASELINE_WINDOW:.0f} s")
            baseline = per_client_hour(
                window(kube, BASELINE_WINDOW), BASELINE_WINDOW, background, BACKGROUND, AGENTS
            )
            for w in watchers:
                w.kill()
                w.wait()
            watchers.clear()

            for i in range(AGENTS):
                nodes.append(ScaleNode(test, work, i, doc))
            wait_until(lambda: all(n.ready() for n in nodes), 300, f"{AGENTS} agents ready")
            time.sleep(5)
            progress(f"{AGENTS} idle agents: {WINDOW:.0f} s")
            agents = per_client_hour(window(kube, WINDOW), WINDOW, background, BACKGROUND, AGENTS)
        finally:
            for w in watchers:
                w.kill()
                w.wait()
            for n in nodes:
                n.stop()
            cluster.stop()

    show(f"upstream's one Node watch (minimal watcher, {BASELINE_WINDOW:.0f} s)", baseline)
    show(f"mcd start (idle, {WINDOW:.0f} s)", agents)
    total, base = sum(agents.values()), sum(baseline.values())
    watches = agents.get(("WATCH", "nodes"), 0.0)
    base_watches = baseline.get(("WATCH", "nodes"), 0.0)
    rows = [
        Row("idle API requests per agent per hour", total, base, "< 30", total < 30, unit="req"),
        Row(
            "idle Node watch requests per agent per hour",
            watches,
            base_watches,
            "(report only)",
            True,
            unit="req",
        ),
    ]
    print_table(rows)


if __name__ == "__main__":
    main()
