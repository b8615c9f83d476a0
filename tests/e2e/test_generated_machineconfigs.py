"""Journey (issue 43, 2): KubeletConfig and ContainerRuntimeConfig on plain Kubernetes.

``mcd controller`` turns each object into the MachineConfig upstream's kubelet-config and
container-runtime-config controllers would name (``99-<pool>-generated-kubelet``, then
``-1`` for the next object of the kind; ``99-<pool>-generated-containerruntime``), holding the
drop-ins the node's kubelet and container runtime read; the pool renders it and targets the new
config; the object says Accepted / Success, or names the forbidden field it refuses; deleting the
objects deletes their MachineConfigs and the pool goes back to the config it had before.
Runs on the fake and on a real kube-apiserver (the CRDs shipped in the plain install).
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from mcd.cluster.api import ApiError
from mcd.cluster.configs import MACHINECONFIGS
from mcd.controller.generated.step import CONTAINERRUNTIMECONFIGS, KUBELETCONFIGS
from mcd.model.generated.kubelet import DROPIN
from mcd.model.generated.runtime import CONTAINERD_DROPIN, CRIO_LOG_LEVEL, CRIO_PIDS_LIMIT
from tests.e2e.configs import worker
from tests.e2e.controller_harness import (
    ControllerProc,
    create_pool,
    get_pool,
    machine_config,
    pool,
    target,
    wait,
)
from tests.e2e.harness import REPO
from tests.e2e.test_controller import _crds  # noqa: F401 - the CRD fixture (autouse there)
from tests.fakes.kubecluster import TestCluster
from tests.fakes.realcluster import install_crd

Obj = dict[str, Any]
POOL_LABEL = "pools.operator.machineconfiguration.openshift.io/worker"
SELECTOR = {"matchLabels": {POOL_LABEL: ""}}
SUFFIX = "machineconfiguration.openshift.io/mc-name-suffix"
CRDS = {"13-kubeletconfig-crd.yaml": KUBELETCONFIGS,
        "14-containerruntimeconfig-crd.yaml": CONTAINERRUNTIMECONFIGS}  # fmt: skip


@pytest.fixture(autouse=True)
def _generating_crds(kube_cluster: TestCluster) -> Iterator[None]:
    """On a real cluster: the two CRDs as the plain install ships them."""
    if kube_cluster.fake is None:
        for name, served in CRDS.items():
            doc = yaml.safe_load((REPO / "daemonset" / "kubernetes" / name).read_text())
            install_crd(kube_cluster.kube, doc, served)
    yield


def _get(cluster: TestCluster, path: str) -> Obj | None:
    try:
        return cluster.kube.request("GET", path)
    except ApiError as e:
        if e.status == 404:
            return None
        raise


def _files(mc: Obj) -> dict[str, str]:
    out = {}
    for f in mc["spec"]["config"]["storage"]["files"]:
        _, _, data = f["contents"]["source"].partition(";base64,")
        out[f["path"]] = base64.b64decode(data).decode()
    return out


def _conditions(cluster: TestCluster, path: str) -> list[tuple[str, str, str]]:
    obj = _get(cluster, path) or {}
    return [(c["type"], c["status"], c["message"])
            for c in (obj.get("status") or {}).get("conditions") or []]  # fmt: skip


def _create(cluster: TestCluster, path: str, kind: str, name: str, spec: Obj) -> str:
    cluster.create(path, {"apiVersion": "machineconfiguration.openshift.io/v1", "kind": kind,
                          "metadata": {"name": name}, "spec": spec})  # fmt: skip
    return f"{path}/{name}"


def test_kubelet_and_runtime_configs_render_report_and_go_with_their_objects(
    kube_cluster: TestCluster, tmp_path: Any
) -> None:
    cluster = kube_cluster
    ns = cluster.namespace("ctl")
    cluster.create(MACHINECONFIGS, machine_config("00-worker", "worker", worker("base")))
    doc = pool("worker", ["worker"], "worker")
    doc["metadata"]["labels"] = {POOL_LABEL: ""}
    create_pool(cluster, doc)
    ctl = ControllerProc(cluster, tmp_path, "a", ns).start()
    try:
        wait(lambda: target(cluster, "worker") != "", 30, "pool rendered", ctl.log)
        before = target(cluster, "worker")

        # a KubeletConfig: its MachineConfig, its status, the pool's new target
        kc = _create(cluster, KUBELETCONFIGS, "KubeletConfig", "max-pods",
                     {"machineConfigPoolSelector": SELECTOR, "logLevel": 2,
                      "kubeletConfig": {"maxPods": 42}})  # fmt: skip
        first = f"{MACHINECONFIGS}/99-worker-generated-kubelet"
        wait(lambda: _get(cluster, first) is not None, 30, "generated kubelet config", ctl.log)
        mc = _get(cluster, first) or {}
        dropin = yaml.safe_load(_files(mc)[DROPIN])
        assert dropin == {"apiVersion": "kubelet.config.k8s.io/v1beta1",
                          "kind": "KubeletConfiguration", "maxPods": 42,
                          "logging": {"verbosity": 2}}  # fmt: skip
        assert mc["metadata"]["labels"] == {"machineconfiguration.openshift.io/role": "worker"}
        assert [r["kind"] for r in mc["metadata"]["ownerReferences"]] == ["KubeletConfig"]
        wait(lambda: _conditions(cluster, kc) == [("Accepted", "True", "Success"),
                                                  ("Success", "True", "Success")],
             30, "KubeletConfig accepted", ctl.log)  # fmt: skip
        meta = (_get(cluster, kc) or {})["metadata"]
        assert meta["annotations"][SUFFIX] == ""
        assert meta["finalizers"] == ["99-worker-generated-kubelet"]
        wait(lambda: "99-worker-generated-kubelet" in [
            s["name"] for s in get_pool(cluster, "worker")["spec"]["configuration"]["source"]],
            30, "the pool renders the generated config", ctl.log)  # fmt: skip
        with_kubelet = target(cluster, "worker")
        assert with_kubelet != before

        # a forbidden field: refused, naming it; nothing generated for it
        bad = _create(cluster, KUBELETCONFIGS, "KubeletConfig", "cluster-dns",
                      {"machineConfigPoolSelector": SELECTOR,
                       "kubeletConfig": {"clusterDNS": ["10.0.0.10"]}})  # fmt: skip
        refusal = ("Error: KubeletConfiguration: clusterDNS is not allowed to be set, "
                   "but contains: [10.0.0.10]")  # fmt: skip
        wait(lambda: _conditions(cluster, bad) == [("Accepted", "False", refusal),
                                                   ("Failure", "True", refusal)],
             30, "KubeletConfig refused", ctl.log)  # fmt: skip
        assert _get(cluster, f"{first}-1") is None
        # corrected: the second object of the kind for the pool gets the suffix -1
        cluster.kube.request("PATCH", bad, body={"spec": {"kubeletConfig": {"clusterDNS": None,
                                                                            "maxPods": 50}}},
                             content_type="application/merge-patch+json")  # fmt: skip
        wait(lambda: _get(cluster, f"{first}-1") is not None, 30, "suffixed config", ctl.log)
        assert yaml.safe_load(_files(_get(cluster, f"{first}-1") or {})[DROPIN])["maxPods"] == 50
        wait(lambda: _conditions(cluster, bad)[-2:] == [("Accepted", "True", "Success"),
                                                        ("Success", "True", "Success")],
             30, "corrected KubeletConfig accepted", ctl.log)  # fmt: skip
        assert (_get(cluster, bad) or {})["metadata"]["annotations"][SUFFIX] == "1"

        # a ContainerRuntimeConfig: CRI-O's and containerd's drop-ins
        ctr = _create(cluster, CONTAINERRUNTIMECONFIGS, "ContainerRuntimeConfig", "debug",
                      {"machineConfigPoolSelector": SELECTOR,
                       "containerRuntimeConfig": {"logLevel": "debug", "pidsLimit": 2048}})  # fmt: skip
        runtime_mc = f"{MACHINECONFIGS}/99-worker-generated-containerruntime"
        wait(lambda: _get(cluster, runtime_mc) is not None, 30, "generated runtime", ctl.log)
        files = _files(_get(cluster, runtime_mc) or {})
        assert files[CRIO_LOG_LEVEL] == '[crio]\n  [crio.runtime]\n    log_level = "debug"\n'
        assert files[CRIO_PIDS_LIMIT] == "[crio]\n  [crio.runtime]\n    pids_limit = 2048\n"
        assert '[debug]\n  level = "debug"\n' in files[CONTAINERD_DROPIN]
        wait(lambda: _conditions(cluster, ctr) == [("Success", "True", "Success")], 30,
             "ContainerRuntimeConfig succeeded", ctl.log)  # fmt: skip

        # deletion: the objects go (their finalizers removed), with their MachineConfigs, and
        # the pool renders back to the config it had before any of them
        for path in (kc, bad, ctr):
            cluster.kube.request("DELETE", path)
        for path in (kc, bad, ctr, first, f"{first}-1", runtime_mc):
            wait(lambda p=path: _get(cluster, p) is None, 30, f"{path} deleted",  # type: ignore[misc]
                 ctl.log)  # fmt: skip
        wait(lambda: target(cluster, "worker") == before, 30, "pool back on its config", ctl.log)
    finally:
        assert ctl.stop() == 0, ctl.log()[-3000:]
