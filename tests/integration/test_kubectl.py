"""The real kubectl against the API server the tests use: get, annotate, patch, cordon, drain."""

from __future__ import annotations

import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from mcd.cluster.node import annotations_of
from mcd.model.vocabulary import Annotation
from tests.fakes.kubecluster import TestCluster


def kubectl(cluster: TestCluster, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    binary = shutil.which("kubectl")
    if binary is None:
        pytest.fail(
            "kubectl is not installed: run scripts/setup.sh (Debian package kubernetes-client)"
        )
    return subprocess.run(
        [binary, f"--kubeconfig={cluster.kubeconfig}", f"--cache-dir={tmp_path / 'cache'}", *args],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def test_kubectl_get_annotate_patch_cordon_drain(kube_cluster: TestCluster, tmp_path: Path) -> None:
    node, ns = kube_cluster.node("worker"), kube_cluster.namespace("apps")
    for i in range(3):
        kube_cluster.pod(ns, f"web-{i}", node, {"app": "web"})
    kube_cluster.pdb(ns, "web-pdb", {"app": "web"}, min_available=3)

    got = kubectl(kube_cluster, tmp_path, "get", "node", node, "-o", "name")
    assert got.returncode == 0, got.stderr
    assert got.stdout.strip() == f"node/{node}"

    got = kubectl(
        kube_cluster,
        tmp_path,
        "annotate",
        "node",
        node,
        f"{Annotation.DESIRED_CONFIG}=rendered-worker-2",
        "--overwrite",
    )
    assert got.returncode == 0, got.stderr
    got = kubectl(
        kube_cluster,
        tmp_path,
        "patch",
        "node",
        node,
        "--type",
        "merge",
        "-p",
        '{"metadata":{"labels":{"role":"worker"}}}',
    )
    assert got.returncode == 0, got.stderr
    got = kubectl(kube_cluster, tmp_path, "patch", "node", node, "--type", "json",
                  "-p", '[{"op":"add","path":"/metadata/labels/zone","value":"a"}]')  # fmt: skip
    assert got.returncode == 0, got.stderr
    got = kubectl(
        kube_cluster, tmp_path, "patch", "node", node, "-p", '{"metadata":{"labels":{"tier":"x"}}}'
    )
    assert got.returncode == 0, got.stderr  # strategic merge patch
    obj = kube_cluster.get_node(node)
    assert annotations_of(obj)[Annotation.DESIRED_CONFIG] == "rendered-worker-2"
    assert {k: obj["metadata"]["labels"][k] for k in ("role", "zone", "tier")} == {
        "role": "worker",
        "zone": "a",
        "tier": "x",
    }

    got = kubectl(kube_cluster, tmp_path, "cordon", node)
    assert got.returncode == 0, got.stderr
    assert kube_cluster.get_node(node)["spec"]["unschedulable"] is True

    threading.Timer(2, kube_cluster.set_min_available, (ns, "web-pdb", 0)).start()
    got = kubectl(kube_cluster, tmp_path, "drain", node, "--force", "--ignore-daemonsets",
                  "--delete-emptydir-data", "--timeout=90s")  # fmt: skip
    assert got.returncode == 0, got.stderr
    assert "disruption budget" in got.stderr  # it was refused (429) before the budget was released
    assert kube_cluster.pods_on(node) == []

    got = kubectl(kube_cluster, tmp_path, "uncordon", node)
    assert got.returncode == 0, got.stderr
    assert not kube_cluster.get_node(node)["spec"].get("unschedulable")
