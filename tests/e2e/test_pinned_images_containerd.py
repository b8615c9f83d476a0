"""PinnedImageSets on a containerd node (issue 42), with the stand-in CRI (``tests/fakes/cri.py``):
the kubelet reports ``containerd://1.6.20`` (or, beside a real kube-apiserver, the stand-in
kubelet's ``fake://1``), the node's ``/etc/crictl.yaml`` names containerd's
socket where it lives (a leftover CRI-O socket beside it), so the images are pulled over that
socket; no CRI-O drop-in is written and nothing is reloaded (containerd has no pinned-images
setting), and the MachineConfigNode reports the set pinned as on CRI-O. Also on a real
kube-apiserver."""

from __future__ import annotations

import json
from pathlib import Path

from mcd.model.node.pinned import CRIO_DROPIN
from tests.e2e.conftest import NodeFactory
from tests.e2e.scenarios import boot_on
from tests.e2e.test_pinned_images import (  # _crds: the CRDs on a real cluster (autouse)
    IMAGE_A,
    IMAGE_B,
    MERGE,
    _conditions,
    _crds,  # noqa: F401
    _setup,
    _wait_sets,
)
from tests.fakes import cri
from tests.fakes.kubecluster import TestCluster

SOCKET = "/run/realnode/containerd.sock"


def test_pinned_images_are_pulled_through_containerds_socket(
    make_node: NodeFactory, kube_cluster: TestCluster, tmp_path: Path
) -> None:
    node = make_node(fake_systemd=True)
    name, state, _pool = _setup(node, kube_cluster, tmp_path)
    kube_cluster.kube.request("PATCH", f"/api/v1/nodes/{node.name}/status", body={
        "status": {"nodeInfo": {"containerRuntimeVersion": "containerd://1.6.20"}},
    }, content_type=MERGE)  # fmt: skip
    crictl = node.path("/etc/crictl.yaml")
    crictl.parent.mkdir(parents=True, exist_ok=True)
    crictl.write_text(f"runtime-endpoint: unix://{SOCKET}\n")
    leftover = node.path("/var/run/crio/crio.sock")  # CRI-O's socket: not the kubelet's runtime
    leftover.parent.mkdir(parents=True, exist_ok=True)
    leftover.write_text("")
    boot_on(node, kube_cluster)

    _wait_sets(kube_cluster, node, [{"name": name, "desiredGeneration": 1,
                                     "currentGeneration": 1}], "set pinned")  # fmt: skip
    pulls = cri.load(state)["pulls"]
    assert sorted(p["image"] for p in pulls) == [IMAGE_A, IMAGE_B]
    assert {p["endpoint"] for p in pulls} == {"unix://" + str(node.path(SOCKET))}
    assert not node.path(CRIO_DROPIN).exists()
    assert not [c for c in node.bus.calls("ReloadUnit") if "crio.service" in json.dumps(c)]
    node.wait_for(lambda: _conditions(kube_cluster, node)["PinnedImageSetsDegraded"]["status"]
                  == "False", 10, "Degraded False once pulled")  # fmt: skip
    progressing = _conditions(kube_cluster, node)["PinnedImageSetsProgressing"]
    assert (progressing["status"], progressing["message"]) == (
        "False", "All pinned image sets complete")  # fmt: skip
    annotations = kube_cluster.kube.request("GET", f"/api/v1/nodes/{node.name}")["metadata"][
        "annotations"]  # fmt: skip
    support = json.loads(annotations["machineconfiguration.openshift.io/mcd-host-support"])
    assert support["containerRuntime"] == "containerd"  # the kubelet's report, published
    # the kubelet's report on the fake API server; the real one's stand-in kubelet reports
    # fake://1 (no runtime mcd knows), so there the host's crictl.yaml decides
    assert "Container runtime: containerd, from " in node.log()
