"""The pool's ``spec.pinnedImageSets`` and ``PinnedImageSetsDegraded`` (upstream's pinned image
set controller, ``pkg/controller/pinnedimageset``): the PinnedImageSets the pool's
``machineConfigSelector`` selects become its list (a set named by hand and no longer selected
is dropped; none: the field goes), the condition is False with no reason or message, and it
does not make the pool Degraded (the pools here select no MachineConfig: their
``RenderDegraded`` is of no concern); a pool selecting ``{}`` is left alone. And end to end: a
set labelled for the node's pool, never named by hand, is pulled and pinned by the agent
(the CRI stand-in). On the fake API server and a real one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcd.cluster.api import MERGE_PATCH
from mcd.cluster.pools import PoolWriter
from mcd.controller.sync import Snapshot, Syncer
from tests.e2e.conftest import NodeFactory
from tests.e2e.scenarios import boot_on
from tests.e2e.test_pinned_images import (  # _crds: the CRDs on a real cluster
    IMAGE_A,
    IMAGE_B,
    _crds,  # noqa: F401
    _setup,
    _wait_sets,
)
from tests.fakes import cri
from tests.fakes.kubecluster import TestCluster

Obj = dict[str, Any]
API = "/apis/machineconfiguration.openshift.io/v1"
ROLE = "machineconfiguration.openshift.io/role"


def _pass(cluster: TestCluster, pool: str) -> tuple[Obj, dict[str, Obj]]:
    """One controller pass over the pool; its spec and conditions as the server has them."""
    kube = cluster.kube
    objs = [kube.request("GET", f"{API}/machineconfigpools/{pool}")]
    Syncer(PoolWriter(kube), "0.1.0").sync_all(Snapshot(objs, {}, []))
    found = kube.request("GET", f"{API}/machineconfigpools/{pool}")
    conditions = (found.get("status") or {}).get("conditions") or []
    return found["spec"], {c["type"]: c for c in conditions}


def _set(cluster: TestCluster, name: str, labels: dict[str, str]) -> None:
    cluster.create(f"{API}/pinnedimagesets", {
        "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "PinnedImageSet",
        "metadata": {"name": name, "labels": labels},
        "spec": {"pinnedImages": [{"name": "quay.io/openshift/a@sha256:" + "a" * 64}]},
    })  # fmt: skip


def _pool(cluster: TestCluster, name: str, selector: Obj, sets: list[str]) -> None:
    cluster.create(f"{API}/machineconfigpools", {
        "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
        "metadata": {"name": name},
        "spec": {"machineConfigSelector": selector,
                 "pinnedImageSets": [{"name": s} for s in sets],
                 "nodeSelector": {"matchLabels": {f"node-role.kubernetes.io/{name}": ""}}},
    })  # fmt: skip


def test_the_sets_labelled_for_a_pool_become_its_list_and_others_are_dropped(
    kube_cluster: TestCluster,
) -> None:
    pool = kube_cluster.name("pin")
    first, second, by_hand = (kube_cluster.name(n) for n in ("b", "a", "hand"))
    _set(kube_cluster, first, {ROLE: pool})
    _set(kube_cluster, second, {ROLE: pool})
    _set(kube_cluster, by_hand, {ROLE: "someone-else"})
    _pool(kube_cluster, pool, {"matchLabels": {ROLE: pool}}, [by_hand])

    spec, conditions = _pass(kube_cluster, pool)
    assert spec["pinnedImageSets"] == [{"name": n} for n in sorted((first, second))]
    degraded = conditions["PinnedImageSetsDegraded"]
    assert degraded["status"] == "False"
    assert "reason" not in degraded and "message" not in degraded
    assert "pinned" not in conditions["Degraded"].get("message", "").lower()

    for name in (first, second):  # relabelled: no longer the pool's
        kube_cluster.kube.request("PATCH", f"{API}/pinnedimagesets/{name}", body={
            "metadata": {"labels": {ROLE: "someone-else"}}}, content_type=MERGE_PATCH)  # fmt: skip
    spec, conditions = _pass(kube_cluster, pool)
    assert "pinnedImageSets" not in spec
    assert conditions["PinnedImageSetsDegraded"]["status"] == "False"


def test_a_pool_selecting_everything_is_left_alone(kube_cluster: TestCluster) -> None:
    pool, name = kube_cluster.name("all"), kube_cluster.name("set")
    _set(kube_cluster, name, {ROLE: "worker"})
    _pool(kube_cluster, pool, {}, ["named-by-hand"])
    spec, conditions = _pass(kube_cluster, pool)
    assert spec["pinnedImageSets"] == [{"name": "named-by-hand"}]
    assert "PinnedImageSetsDegraded" not in conditions


def test_a_set_labelled_for_the_pool_is_pinned_without_being_named(
    make_node: NodeFactory, kube_cluster: TestCluster, tmp_path: Path
) -> None:
    """The agent's pool names no set; one is labelled for it; after the controller's pass the
    agent pulls and pins its images and reports it on its MachineConfigNode."""
    node = make_node(fake_systemd=True)
    name, state, pool = _setup(node, kube_cluster, tmp_path)  # the set: labelled for the pool
    kube_cluster.kube.request("PATCH", f"{API}/machineconfigpools/{pool}", body={
        "spec": {"pinnedImageSets": None}}, content_type=MERGE_PATCH)  # fmt: skip
    boot_on(node, kube_cluster)
    spec, conditions = _pass(kube_cluster, pool)
    assert spec["pinnedImageSets"] == [{"name": name}]
    assert conditions["PinnedImageSetsDegraded"]["status"] == "False"
    _wait_sets(kube_cluster, node, [{"name": name, "desiredGeneration": 1,
                                     "currentGeneration": 1}], "labelled set pinned")  # fmt: skip
    assert {IMAGE_A, IMAGE_B} <= {p["image"] for p in cri.load(state)["pulls"]}
