"""``mcd status --cluster`` on a node whose agent is not running (issue 40, item 5).

A node's annotations say ``Done``, but its DaemonSet pod is Pending on an image that cannot be
pulled: the screen must say the agent is not running and why (the kubelet's waiting reason),
list it under ALERTS (no shipped rule covers it: the row says so), and point at the pod; a
node whose agent pod is Running and Ready, and one whose agent runs outside pods and renews
its node Lease, are running. On the fake API server and on a real kube-apiserver (its nodes
carry no ``mcd-test`` label, so the kit's kubelet stand-in leaves their pods alone: the test
writes the pod status a kubelet would).
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

from click.testing import CliRunner

from mcd.cli import cli
from mcd.cluster.pools import POOLS
from mcd.model.vocabulary import Annotation
from tests.e2e.test_controller import _crds  # noqa: F401  # the pool CRD on a real cluster
from tests.fakes.kubecluster import TestCluster
from tests.patience import patient

DS_LABELS = {"app.kubernetes.io/name": "mcd"}  # daemonset/base/03-daemonset.yaml's selector
IMAGE = "registry.invalid/mcd/mcd:does-not-exist"


def _node(cluster: TestCluster, base: str, label: str) -> str:
    name = cluster.name(base)
    done = {Annotation.CURRENT_CONFIG: "rendered-w-1", Annotation.DESIRED_CONFIG: "rendered-w-1",
            Annotation.STATE: "Done"}  # fmt: skip
    cluster.create("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node",
                                     "metadata": {"name": name, "labels": {label: ""},
                                                  "annotations": done}})  # fmt: skip
    return name


def _agent_pod(cluster: TestCluster, namespace: str, node: str, status: dict[str, object]) -> str:
    name = f"mcd-{node}"
    cluster.create(f"/api/v1/namespaces/{namespace}/pods", {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": DS_LABELS},
        "spec": {"nodeName": node, "terminationGracePeriodSeconds": 0,
                 "tolerations": [{"operator": "Exists"}],
                 "containers": [{"name": "mcd", "image": IMAGE}]},
    })  # fmt: skip
    cluster.kube.request(  # what the node's kubelet would report
        "PATCH", f"/api/v1/namespaces/{namespace}/pods/{name}/status",
        body={"status": status}, content_type="application/merge-patch+json",
    )  # fmt: skip
    return name


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_a_node_whose_agent_pod_cannot_pull_its_image_is_not_done(
    kube_cluster: TestCluster,
) -> None:
    cluster = kube_cluster
    label = f"mcd-agents-{cluster.suffix}"
    ns = cluster.namespace("agents")
    pulling, running, host = (_node(cluster, b, label) for b in ("pull", "run", "host"))
    back_off = f'Back-off pulling image "{IMAGE}"'
    _agent_pod(cluster, ns, pulling, {
        "phase": "Pending",
        "conditions": [{"type": "Ready", "status": "False", "reason": "ContainersNotReady",
                        "lastTransitionTime": _now()}],
        "containerStatuses": [{"name": "mcd", "image": IMAGE, "imageID": "", "ready": False,
                               "restartCount": 0, "started": False,
                               "state": {"waiting": {"reason": "ImagePullBackOff",
                                                     "message": back_off}}}],
    })  # fmt: skip
    _agent_pod(cluster, ns, running, {
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": _now()}],
    })  # fmt: skip
    # an agent outside pods (`mcd start` as a host service) renews its node Lease
    micro = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    cluster.create(f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases", {
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": host},
        "spec": {"holderIdentity": f"{host}_0123abcd", "leaseDurationSeconds": 600,
                 "acquireTime": micro, "renewTime": micro},
    })  # fmt: skip
    pool = cluster.name("agents")
    cluster.create(POOLS, {
        "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
        "metadata": {"name": pool},
        "spec": {"nodeSelector": {"matchLabels": {label: ""}},
                 "machineConfigSelector": {"matchLabels": {"none": "none"}}},
    })  # fmt: skip

    args = ["status", "--cluster", "--kubeconfig", str(cluster.kubeconfig)]
    done = CliRunner().invoke(cli, args, env={"NO_COLOR": "1", "KUBECONFIG": None})
    assert done.exit_code == 0, done.output
    text = done.stdout
    reason = f"ImagePullBackOff: {back_off}"
    assert f"  {pool}: node {pulling}: agent not running: {reason}" in text
    assert running not in text and host not in text.split("ALERTS")[1]  # both run
    assert "ALERTS: none would fire" not in text
    alerts = text.split("ALERTS", 1)[1]
    assert f"(none in mcd's rules)   node={pulling}   agent not running ({reason})" in alerts
    assert "docs/runbook.md#8-the-agent-itself" in alerts
    assert f"Next: kubectl -n {ns} describe pod mcd-{pulling}   (the agent on {pulling}" in text
    assert f"agent not running on {pulling}" in text.splitlines()[1]

    wide = CliRunner().invoke(cli, [*args, "-o", "wide"], env={"KUBECONFIG": None}).stdout
    assert any(line.split()[:3] == [pulling, "NotRunning", f"{ns}/mcd-{pulling}"]
               for line in wide.splitlines())  # fmt: skip
    assert any(line.split()[:2] == [running, "Running"] for line in wide.splitlines())
    assert any(line.split()[:3] == [host, "Running", "-"] for line in wide.splitlines())

    doc = json.loads(
        CliRunner().invoke(cli, [*args, "-o", "json"], env={"KUBECONFIG": None}).stdout
    )
    agents = {a["node"]: a for a in doc["agents"]}
    assert (agents[pulling]["running"], agents[pulling]["reason"]) == (False, reason)
    assert agents[running]["running"] and agents[host]["running"]


def test_status_cluster_watch_prints_again_on_every_change_until_interrupted(
    kube_cluster: TestCluster, tmp_path: Path
) -> None:
    """``status --cluster --watch`` is ``kubectl get -w``: the screen, then again each time
    it changes, until Ctrl-C (exit 130)."""
    cluster = kube_cluster
    label = f"mcd-watch-{cluster.suffix}"
    node = _node(cluster, "watch", label)
    pool = cluster.name("watch")
    cluster.create(POOLS, {
        "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
        "metadata": {"name": pool},
        "spec": {"nodeSelector": {"matchLabels": {label: ""}},
                 "machineConfigSelector": {"matchLabels": {"none": "none"}}},
    })  # fmt: skip
    env = {**os.environ, "KUBECONFIG": "", "NO_COLOR": "1"}
    args = [sys.executable, "-m", "mcd", "status", "--cluster", "--watch", "--interval", "0.5",
            "--kubeconfig", str(cluster.kubeconfig)]  # fmt: skip
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=tmp_path)  # fmt: skip
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        for line in proc.stdout or ():
            lines.put(line)

    threading.Thread(target=read, daemon=True).start()
    seen: list[str] = []

    def until(text: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + patient(timeout)
        while not any(text in line for line in seen):
            left = deadline - time.monotonic()
            assert left > 0 and proc.poll() is None, (text, seen, proc.poll())
            try:
                seen.append(lines.get(timeout=min(left, 1.0)))
            except queue.Empty:
                continue

    try:
        until(f"node {node}: agent not running")
        screens = sum(line.startswith("NAME ") and "AVAILABLE" in line for line in seen)
        cluster.kube.request(
            "PATCH", f"/api/v1/nodes/{node}", content_type="application/merge-patch+json",
            body={"metadata": {"annotations": {Annotation.STATE: "Degraded",
                                               Annotation.REASON: "watched"}}},
        )  # fmt: skip
        until(f"node {node}: Degraded: watched")
        assert sum(line.startswith("NAME ") and "AVAILABLE" in line for line in seen) > screens
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            code = proc.wait(30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
    assert code == 130
