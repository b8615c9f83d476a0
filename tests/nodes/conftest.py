"""Fixtures for the tests on real nodes (:mod:`tests.nodes.kit`).

``installed`` (one per module: its nodes are shared by the module's tests) builds the image
(``make image``'s recipe), brings up the control plane and two nodes, loads the image into
them and applies the plain-Kubernetes install (``kubectl apply -k``) through an overlay in a
temp dir that only points the images at the loaded one and adapts what two nodes sharing one
host's network need (below). The agent then runs as the DaemonSet's pod on each node, with
its pod-bound token, the node's root at ``/rootfs`` and the node's systemd over D-Bus.
Everything is taken down by pid at the end (``realnode.sh down``), also on failure.

Tests here are marked ``nodes`` (``make test-nodes`` selects them) and stay on one xdist
worker (group ``realnode``): only one realnode cluster runs per host.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from tests.nodes import image, kit
from tests.nodes.kit import RealNodes, wait

REPO = Path(__file__).resolve().parents[2]
IMAGE = "localhost/mcd:nodes"
SHIPPED_IMAGE = "ghcr.io/mcd-project/mcd"
NODES = ("realnode-1", "realnode-2")
AGENT = "/spec/template/spec/containers/0"


def overlay(where: Path) -> Path:
    """A kustomization over ``daemonset/kubernetes`` (the shipped files are not touched):

    - every image is the one loaded into the nodes (``imagePullPolicy: Never`` for the agent:
      nothing is pulled);
    - the agent's ``/metrics``, ``/healthz`` and ``/readyz`` listen on the node's address
      (``status.hostIP``) instead of 127.0.0.1, and its probes ask the pod's address (the
      node's, for a host-network pod): the test nodes share one host's network, so two agents
      on 127.0.0.1:8797 would collide (on a real machine each node has its own loopback);
    - the controller runs as a host process with its ServiceAccount's token (the test reads
      its log), and the config server is not needed: both Deployments scaled to 0.
    """
    where.mkdir(parents=True, exist_ok=True)
    base = os.path.relpath(REPO / "daemonset" / "kubernetes", where)
    agent_ops = [
        {"op": "test", "path": f"{AGENT}/args/3", "value": "--metrics-url=127.0.0.1:8797"},
        {"op": "replace", "path": f"{AGENT}/args/3", "value": "--metrics-url=$(HOST_IP):8797"},
        {"op": "add", "path": f"{AGENT}/env/-",
         "value": {"name": "HOST_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}}},
        {"op": "remove", "path": f"{AGENT}/livenessProbe/httpGet/host"},
        {"op": "remove", "path": f"{AGENT}/readinessProbe/httpGet/host"},
        {"op": "add", "path": f"{AGENT}/imagePullPolicy", "value": "Never"},
    ]  # fmt: skip
    scale = [{"op": "replace", "path": "/spec/replicas", "value": 0}]
    name, _, tag = IMAGE.rpartition(":")
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [base],
        "images": [{"name": SHIPPED_IMAGE, "newName": name, "newTag": tag}],
        "patches": [
            {"target": {"kind": "DaemonSet", "name": "mcd"}, "patch": yaml.safe_dump(agent_ops)},
            {"target": {"kind": "Deployment", "name": "mcd-controller"},
             "patch": yaml.safe_dump(scale)},
            {"target": {"kind": "Deployment", "name": "mcd-server"},
             "patch": yaml.safe_dump(scale)},
        ],
    }  # fmt: skip
    (where / "kustomization.yaml").write_text(yaml.safe_dump(kustomization, sort_keys=False))
    return where


def host_kubeconfig(nodes: RealNodes) -> str:
    """What a node's ``/etc/kubernetes/kubeconfig`` names (upstream's daemon reads the API
    server address there: the test nodes have no kube-proxy, so a host-network pod cannot
    reach the ``kubernetes`` Service's address)."""
    server = nodes.env["KAS_URL"]
    return yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "local", "cluster": {"server": server}}],
        "contexts": [{"name": "local", "context": {"cluster": "local"}}],
        "current-context": "local",
    })  # fmt: skip


@dataclass
class Installed:
    nodes: RealNodes
    workdir: Path
    timings: dict[str, float] = field(default_factory=dict)

    def agent_pod(self, node: str) -> kit.Obj | None:
        pods = self.nodes.get("pods", "-n", "mcd", "-l", "app.kubernetes.io/name=mcd",
                              "--field-selector", f"spec.nodeName={node}")["items"]  # fmt: skip
        return pods[0] if pods else None

    def agent_running(self, node: str) -> bool:
        pod = self.agent_pod(node)
        if pod is None or (pod.get("status") or {}).get("phase") != "Running":
            return False
        statuses = pod["status"].get("containerStatuses") or []
        return bool(statuses) and all(s.get("ready") for s in statuses)

    def agent_log(self, node: str) -> str:
        pod = self.agent_pod(node)
        if pod is None:
            return f"(no agent pod on {node})"
        done = self.nodes.kubectl("logs", "-n", "mcd", pod["metadata"]["name"], "--tail=60",
                                  check=False)  # fmt: skip
        return f"--- agent on {node}:\n{done.stdout}{done.stderr}"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    why = kit.unavailable() or image.unavailable()
    if why:
        pytest.skip(f"real nodes: {why}")
    workdir = tmp_path_factory.mktemp("realnodes")
    timings: dict[str, float] = {}
    tarball = workdir / "mcd-image.tar"
    timings["image"] = image.build_tarball(tarball, IMAGE)
    nodes = RealNodes(workdir)
    try:
        nodes.up()
        for name in NODES:
            nodes.node_up(name)
        start = time.monotonic()
        nodes.load(tarball)
        timings["load"] = time.monotonic() - start
        for name in NODES:
            nodes.exec(name, "sh", "-c", "mkdir -p /etc/kubernetes && "
                       "cat > /etc/kubernetes/kubeconfig", stdin=host_kubeconfig(nodes))  # fmt: skip
        start = time.monotonic()
        nodes.kubectl("apply", "-k", str(overlay(workdir / "overlay")))
        nodes.kubectl("wait", "--for", "condition=Established", "--timeout=120s",
                      "crd/machineconfigpools.machineconfiguration.openshift.io",
                      "crd/machineconfigs.machineconfiguration.openshift.io")  # fmt: skip
        ready = Installed(nodes, workdir, timings)
        for name in NODES:
            wait(lambda n=name: ready.agent_running(n), 240, f"the agent pod Ready on {name}",
                 lambda n=name: ready.agent_log(n))  # fmt: skip
        timings["agents ready"] = time.monotonic() - start
        timings.update(nodes.timings)
        yield ready
    finally:
        nodes.down()
