"""The pool's ``PinnedImageSetsDegraded`` (upstream's pinned image set controller): True,
naming the set, while a PinnedImageSet the pool names does not exist; False once it does;
and it does not make the pool Degraded (the pools here select no MachineConfig: their
``RenderDegraded`` is of no concern). On the fake API server and a real one."""

from __future__ import annotations

from typing import Any

from mcd.cluster.pools import PoolWriter
from mcd.controller.sync import Snapshot, Syncer
from tests.e2e.test_pinned_images import _crds  # noqa: F401 - the CRDs on a real cluster
from tests.fakes.kubecluster import TestCluster

Obj = dict[str, Any]
API = "/apis/machineconfiguration.openshift.io/v1"


def _pass(cluster: TestCluster, pool: str) -> dict[str, Obj]:
    kube = cluster.kube
    objs = [kube.request("GET", f"{API}/machineconfigpools/{pool}")]
    Syncer(PoolWriter(kube), "0.1.0").sync_all(Snapshot(objs, {}, []))
    status = kube.request("GET", f"{API}/machineconfigpools/{pool}").get("status") or {}
    return {c["type"]: c for c in status.get("conditions") or []}


def test_a_missing_pinned_image_set_degrades_the_pools_pinning_until_it_exists(
    kube_cluster: TestCluster,
) -> None:
    pool, name = kube_cluster.name("pin"), kube_cluster.name("set")
    kube_cluster.create(f"{API}/machineconfigpools", {
        "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
        "metadata": {"name": pool},
        "spec": {"pinnedImageSets": [{"name": name}],
                 "nodeSelector": {"matchLabels": {f"node-role.kubernetes.io/{pool}": ""}}},
    })  # fmt: skip

    degraded = _pass(kube_cluster, pool)["PinnedImageSetsDegraded"]
    assert degraded["status"] == "True"
    assert degraded["message"] == (
        f"Failed to populate pinned image sets for pool {pool}: "
        f'pinnedimagesets.machineconfiguration.openshift.io "{name}" not found'
    )
    assert "reason" not in degraded
    pool_degraded = _pass(kube_cluster, pool)["Degraded"]  # (here: nothing to render)
    assert "pinned" not in pool_degraded.get("message", "").lower()

    kube_cluster.create(f"{API}/pinnedimagesets", {
        "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "PinnedImageSet",
        "metadata": {"name": name},
        "spec": {"pinnedImages": [{"name": "quay.io/openshift/a@sha256:" + "a" * 64}]},
    })  # fmt: skip
    conditions = _pass(kube_cluster, pool)
    assert conditions["PinnedImageSetsDegraded"]["status"] == "False"
    assert "message" not in conditions["PinnedImageSetsDegraded"]


def test_a_pool_that_names_no_set_gets_no_such_condition(kube_cluster: TestCluster) -> None:
    pool = kube_cluster.name("plain")
    kube_cluster.create(f"{API}/machineconfigpools", {
        "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
        "metadata": {"name": pool},
        "spec": {"nodeSelector": {"matchLabels": {f"node-role.kubernetes.io/{pool}": ""}}},
    })  # fmt: skip
    assert "PinnedImageSetsDegraded" not in _pass(kube_cluster, pool)
