"""Fixtures for the tests on real nodes (:mod:`tests.nodes.kit`).

``installed`` (one per session: its nodes are shared by the tests of every module, in file
order: the rollout of ``test_daemonset``, then the journeys of ``test_journeys``) builds the image
(``make image``'s recipe), brings up the control plane and two nodes, loads the image into
them and applies the plain-Kubernetes install (``kubectl apply -k``) through an overlay in a
temp dir that only points the images at the loaded one and adapts what two nodes sharing one
host's network need (below). The agent then runs as the DaemonSet's pod on each node, with
its pod-bound token, the node's root at ``/rootfs`` and the node's systemd over D-Bus, and
``mcd controller`` as its Deployment's two pods (one acts, holding the Lease), with its
ServiceAccount's token, on the nodes' pod network.
Everything is taken down by pid at the end (``realnode.sh down``), also on failure.

Tests here are marked ``nodes`` (``make test-nodes`` selects them) and stay on one xdist
worker (group ``realnode``): only one realnode cluster runs per host.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import pytest
import yaml

from mcd.model.vocabulary import Annotation
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
    - the config server's Deployment is scaled to 0 (no test needs it; it would wait for its
      TLS Secret).
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


def health_conf(nodes: RealNodes, node: str) -> str:
    """The node's health-gate settings (``/etc/mcd/health.conf``): its kubelet's health
    endpoint, which the kit puts on port 10248 + 10 * the node's index (the nodes share the
    host's network), so that the gate's kubelet check asks this node's real kubelet."""
    index = int((Path(nodes.env["REALNODE_STATE"]) / "nodes" / node / "idx").read_text())
    return f"kubelet_url = http://127.0.0.1:{10248 + 10 * index}/healthz\n"


INITIAL = "rendered-worker-initial"
"""The install's config: what a node's first boot left (empty here)."""


def install(nodes: RealNodes, kustomization: Path) -> None:
    """The install on nodes a bootstrap configured: the CRDs, the config the nodes were
    installed with and, on each node, the handoff a booting node's Machine Config Server
    leaves (``/etc/machine-config-daemon/node-annotations.json``: its currentConfig,
    desiredConfig and state), then everything (``kubectl apply -k``): the agent pods start
    on nodes that already name their config (upstream ``loadNodeAnnotations``)."""
    rendered = list(yaml.safe_load_all(nodes.kubectl("kustomize", str(kustomization)).stdout))
    crds = [d for d in rendered if d and d["kind"] == "CustomResourceDefinition"]
    nodes.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(crds))
    nodes.kubectl("wait", "--for", "condition=Established", "--timeout=120s",
                  *(f"crd/{d['metadata']['name']}" for d in crds))  # fmt: skip
    initial = {"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
               "metadata": {"name": INITIAL},
               "spec": {"config": {"ignition": {"version": "3.4.0"}}}}  # fmt: skip
    nodes.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(initial))
    handoff = json.dumps({Annotation.CURRENT_CONFIG: INITIAL, Annotation.DESIRED_CONFIG: INITIAL,
                          Annotation.STATE: "Done"})  # fmt: skip
    for name in nodes.nodes:
        nodes.exec(name, "sh", "-c", "mkdir -p /etc/machine-config-daemon && "
                   "cat > /etc/machine-config-daemon/node-annotations.json", stdin=handoff)  # fmt: skip
    nodes.kubectl("apply", "-k", str(kustomization))


@dataclass
class Installed:
    nodes: RealNodes
    workdir: Path
    timings: dict[str, float] = field(default_factory=dict)

    def logs(self) -> str:
        return "\n".join([self.controller_log(), *(self.agent_log(n) for n in NODES)])

    def controller_log(self) -> str:
        done = self.nodes.kubectl("logs", "-n", "mcd", "-l", "app.kubernetes.io/name=mcd-controller",
                                  "--prefix", "--tail=40", check=False)  # fmt: skip
        return f"--- controller pods:\n{done.stdout}{done.stderr}"

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


@pytest.fixture(scope="session")
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
        tarball.unlink()  # 450 MiB; the kit keeps its own copy for nodes that boot later
        for name in NODES:
            nodes.exec(name, "sh", "-c", "mkdir -p /etc/kubernetes && "
                       "cat > /etc/kubernetes/kubeconfig", stdin=host_kubeconfig(nodes))  # fmt: skip
            nodes.exec(name, "sh", "-c", "mkdir -p /etc/mcd && cat > /etc/mcd/health.conf",
                       stdin=health_conf(nodes, name))  # fmt: skip
        start = time.monotonic()
        install(nodes, overlay(workdir / "overlay"))
        # the agents wait for the controller's pods (--drain-mode=controller) before their
        # first sync ends (upstream: the uncordon of the node's current config, asked and
        # applied), so Ready agents mean a working controller too
        ready = Installed(nodes, workdir, timings)
        for name in NODES:
            wait(partial(ready.agent_running, name), 300, f"the agent pod Ready on {name}",
                 ready.logs)  # fmt: skip
        timings["agents ready"] = time.monotonic() - start
        timings.update(nodes.timings)
        yield ready
    finally:
        nodes.down()
