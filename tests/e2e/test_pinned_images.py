"""PinnedImageSets end to end (issue 32), with a stand-in CRI (``tests/fakes/cri.py``: the
``crictl`` the agent runs, recording pulls, failing one on demand or as a full disk): the
images of the sets the node's pool names are pulled over the node's CRI socket, pinned in
``/etc/crio/crio.conf.d/50-pinned-images`` with a reload of CRI-O, and reported on the
MachineConfigNode as upstream's ``PinnedImageSetManager`` does; a failed pull, a full disk and
too little allocatable storage are reported as upstream reports them; the controller's pass
rolls the node's progress up into the pool's ``status.poolSynchronizersStatus``. Also on a real
kube-apiserver, with daemonset/kubernetes/04's MachineConfigPool CRD (upstream's ``spec.pinnedImageSets``
and ``status.poolSynchronizersStatus``) and daemonset/kubernetes/10's PinnedImageSet CRD."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from mcd.cluster.pools import PoolWriter
from mcd.controller.sync import Snapshot, Syncer
from mcd.model.node.pinned import CRIO_DROPIN
from tests.e2e.conftest import NodeFactory
from tests.e2e.harness import REPO, AgentNode
from tests.e2e.scenarios import boot_on
from tests.e2e.test_machineconfignode import MCN
from tests.fakes import cri
from tests.fakes.kubecluster import TestCluster
from tests.fakes.realcluster import install_crd

Obj = dict[str, Any]
API = "/apis/machineconfiguration.openshift.io/v1"
MERGE = "application/merge-patch+json"
ROLE = "machineconfiguration.openshift.io/role"
IMAGE_A = "quay.io/openshift/pinned-a@sha256:" + "a" * 64
IMAGE_B = "quay.io/openshift/pinned-b@sha256:" + "b" * 64
IMAGE_C = "quay.io/openshift/pinned-c@sha256:" + "c" * 64
IMAGE_D = "quay.io/openshift/pinned-d@sha256:" + "d" * 64
CRDS = {
    "04-machineconfigpool-crd.yaml": f"{API}/machineconfigpools",
    "10-pinnedimageset-crd.yaml": f"{API}/pinnedimagesets",
}


@pytest.fixture(autouse=True)
def _crds(kube_cluster: TestCluster) -> Iterator[None]:
    """On a real cluster: daemonset/kubernetes/04 and 10 as shipped (replacing an older copy),
    established before the test (the fake serves both built in)."""
    if kube_cluster.fake is None:
        for file, served in CRDS.items():
            doc = yaml.safe_load((REPO / "daemonset" / "kubernetes" / file).read_text())
            install_crd(kube_cluster.kube, doc, served)
    yield


def _pool_pass(cluster: TestCluster, pool: str, node: AgentNode) -> Obj:
    """One pass of the controller over the pool (in process, a fresh listing of the
    MachineConfigNodes); the pool's ``PinnedImageSets`` synchronizer status as written."""
    kube = cluster.kube
    objs = [kube.request("GET", f"{API}/machineconfigpools/{pool}")]
    nodes = [kube.request("GET", f"/api/v1/nodes/{node.name}")]
    Syncer(PoolWriter(kube), "0.1.0").sync_all(Snapshot(objs, {}, nodes))
    status = kube.request("GET", f"{API}/machineconfigpools/{pool}").get("status") or {}
    [found] = status["poolSynchronizersStatus"]
    assert found["poolSynchronizerType"] == "PinnedImageSets"
    assert found["machineCount"] == status["machineCount"] == 1
    return dict(found)


def _setup(node: AgentNode, cluster: TestCluster, tmp_path: Path) -> tuple[str, Path, str]:
    """A custom pool for the node naming one PinnedImageSet (images A and B), room on the
    node, and the CRI stand-in; returns the set's name, the CRI state file and the pool."""
    role = cluster.name("pin")
    kube = cluster.kube
    kube.request("PATCH", f"/api/v1/nodes/{node.name}", body={
        "metadata": {"labels": {f"node-role.kubernetes.io/{role}": ""}},
    }, content_type=MERGE)  # fmt: skip
    kube.request("PATCH", f"/api/v1/nodes/{node.name}/status", body={
        "status": {"allocatable": {"ephemeral-storage": "100Gi"},
                   "conditions": [{"type": "Ready", "status": "True"},
                                  {"type": "DiskPressure", "status": "False"}]},
    }, content_type=MERGE)  # fmt: skip
    name = cluster.name("set")
    cluster.create(f"{API}/pinnedimagesets", {
        "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "PinnedImageSet",
        "metadata": {"name": name, "labels": {ROLE: role}},
        "spec": {"pinnedImages": [{"name": IMAGE_B}, {"name": IMAGE_A}]},
    })  # fmt: skip
    cluster.create(f"{API}/machineconfigpools", {  # the set is the pool's by name and label
        "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
        "metadata": {"name": role},
        "spec": {"pinnedImageSets": [{"name": name}],
                 "machineConfigSelector": {"matchLabels": {ROLE: role}},
                 "nodeSelector": {"matchLabels": {f"node-role.kubernetes.io/{role}": ""}}},
    })  # fmt: skip
    state = tmp_path / "cri.json"
    cri.save(state, cri.new_state())
    node.base_env.update(
        MCD_FAKE_CRI_STATE=str(state),
        MCD_PINNED_IMAGES_INTERVAL="0.2",
        MCD_PINNED_IMAGES_RETRY_SCALE="0.001",
    )
    return name, state, role


def _mcn(cluster: TestCluster, node: AgentNode) -> Obj:
    return cluster.kube.request("GET", f"{MCN}/{node.name}")


def _conditions(cluster: TestCluster, node: AgentNode) -> dict[str, Obj]:
    return {c["type"]: c for c in (_mcn(cluster, node).get("status") or {}).get("conditions", [])}


def _wait_sets(cluster: TestCluster, node: AgentNode, wanted: list[Obj], what: str) -> None:
    node.wait_for(
        lambda: (_mcn(cluster, node).get("status") or {}).get("pinnedImageSets") == wanted,
        20, what,
    )  # fmt: skip


def _bump(cluster: TestCluster, name: str, images: list[str]) -> None:
    cluster.kube.request("PATCH", f"{API}/pinnedimagesets/{name}", body={
        "spec": {"pinnedImages": [{"name": i} for i in images]}}, content_type=MERGE)  # fmt: skip


def test_pinned_images_are_pulled_pinned_and_reported_and_failures_say_why(
    make_node: NodeFactory, kube_cluster: TestCluster, tmp_path: Path
) -> None:
    node = make_node(fake_systemd=True)
    name, state, pool = _setup(node, kube_cluster, tmp_path)
    boot_on(node, kube_cluster)

    # pulled, pinned, reported
    _wait_sets(kube_cluster, node, [{"name": name, "desiredGeneration": 1,
                                     "currentGeneration": 1}], "set pinned")  # fmt: skip
    got = cri.load(state)
    socket = "unix://" + str(node.path("/var/run/crio/crio.sock"))
    assert sorted(p["image"] for p in got["pulls"]) == [IMAGE_A, IMAGE_B]
    assert {p["endpoint"] for p in got["pulls"]} == {socket}
    assert node.path(CRIO_DROPIN).read_text() == (
        f'[crio]\n  [crio.image]\n    pinned_images = ["{IMAGE_A}", "{IMAGE_B}"]\n'
    )
    reloads = [c for c in node.bus.calls("ReloadUnit") if "crio.service" in json.dumps(c)]
    assert len(reloads) == 1
    # the sets, then Degraded, are two writes (an earlier failed try may have set Degraded)
    node.wait_for(lambda: _conditions(kube_cluster, node)["PinnedImageSetsDegraded"]["status"]
                  == "False", 10, "Degraded False once pinned")  # fmt: skip
    conditions = _conditions(kube_cluster, node)
    progressing = conditions["PinnedImageSetsProgressing"]
    assert (progressing["status"], progressing["reason"], progressing["message"]) == (
        "False", "AsExpected", "All pinned image sets complete")  # fmt: skip
    degraded = conditions["PinnedImageSetsDegraded"]
    assert (degraded["status"], degraded["message"]) == ("False", "All is good")
    assert conditions["Updated"]["status"] == "True"  # pinning is no update of the node
    assert _pool_pass(kube_cluster, pool, node)["updatedMachineCount"] == 1

    # a pull that keeps failing: Degraded, the set's failed generation and upstream's error
    got["fail"][IMAGE_C] = "manifest unknown"
    cri.save(state, got)
    _bump(kube_cluster, name, [IMAGE_A, IMAGE_B, IMAGE_C])
    error = (f'failed to pull image "{IMAGE_C}" (5 tries): timed out waiting for the condition: '
             "pulling image: rpc error: code = Unknown desc = manifest unknown")  # fmt: skip
    _wait_sets(kube_cluster, node, [{"name": name, "desiredGeneration": 2,
                                     "lastFailedGeneration": 2,
                                     "lastFailedGenerationError": error}], "failed pull")  # fmt: skip
    degraded = _conditions(kube_cluster, node)["PinnedImageSetsDegraded"]
    assert (degraded["status"], degraded["reason"]) == ("True", "PrefetchFailed")
    assert degraded["message"] == (
        "One or more PinnedImageSet is experiencing an error. See PinnedImageSet list for more "
        "details."
    )
    assert IMAGE_C not in node.path(CRIO_DROPIN).read_text()  # pinned only once all pulled
    assert _pool_pass(kube_cluster, pool, node)["updatedMachineCount"] == 0

    # a full disk: fails at once (one try), said as the runtime says it
    with cri.locked(state) as s:
        s["fail"] = {}
        s["disk_full"] = True
    _bump(kube_cluster, name, [IMAGE_A, IMAGE_D])
    full = f'failed to pull image "{IMAGE_D}" (1 tries): pulling image: rpc error: code = ' \
           f"Unknown desc = {cri.NO_SPACE}: pulling image: rpc error: code = Unknown desc = " \
           f"{cri.NO_SPACE}"  # fmt: skip
    _wait_sets(kube_cluster, node, [{"name": name, "desiredGeneration": 3,
                                     "lastFailedGeneration": 3,
                                     "lastFailedGenerationError": full}], "full disk")  # fmt: skip
    assert sum(p["image"] == IMAGE_D for p in cri.load(state)["pulls"]) == 1

    # too little allocatable storage: refused before any pull
    kube_cluster.kube.request("PATCH", f"/api/v1/nodes/{node.name}/status", body={
        "status": {"allocatable": {"ephemeral-storage": "10Gi"}}}, content_type=MERGE)  # fmt: skip
    low = ("storage available is less than minimum required capacity: 10737418240, "
           "required: 17179869184")  # fmt: skip
    _wait_sets(kube_cluster, node, [{"name": name, "desiredGeneration": 3,
                                     "lastFailedGeneration": 3,
                                     "lastFailedGenerationError": low}], "low storage")  # fmt: skip

    # room again, the disk freed: pinned at generation 3, Degraded cleared
    kube_cluster.kube.request("PATCH", f"/api/v1/nodes/{node.name}/status", body={
        "status": {"allocatable": {"ephemeral-storage": "100Gi"}}}, content_type=MERGE)  # fmt: skip
    with cri.locked(state) as s:
        s["disk_full"] = False
    _wait_sets(kube_cluster, node, [{"name": name, "desiredGeneration": 3,
                                     "currentGeneration": 3}], "pinned again")  # fmt: skip
    assert node.path(CRIO_DROPIN).read_text() == (
        f'[crio]\n  [crio.image]\n    pinned_images = ["{IMAGE_A}", "{IMAGE_D}"]\n'
    )
    node.wait_for(lambda: _conditions(kube_cluster, node)["PinnedImageSetsDegraded"]["status"]
                  == "False", 10, "Degraded cleared")  # fmt: skip
