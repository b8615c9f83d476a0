"""The install manifests in ``daemonset/``: applied with the real kubectl to the test API server,
and checked for what the DaemonSet must carry (issue 7)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.fakes.kubecluster import TestCluster
from tests.integration.test_kubectl import kubectl

REPO = Path(__file__).resolve().parents[2]
MANIFESTS = REPO / "daemonset"


def documents() -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for path in sorted(MANIFESTS.glob("*.yaml")):
        docs.extend(d for d in yaml.safe_load_all(path.read_text()) if d)
    return docs


def test_kubectl_apply_of_every_manifest(kube_cluster: TestCluster, tmp_path: Path) -> None:
    if kube_cluster.fake is None:  # a real cluster: never install cluster-wide objects from a test
        dry = kubectl(kube_cluster, tmp_path, "apply", "--dry-run=server", "-f", str(MANIFESTS))
        assert dry.returncode == 0, dry.stderr
        return
    # the fake serves no OpenAPI schemas, so kubectl's client-side schema check is off here
    applied = kubectl(kube_cluster, tmp_path, "apply", "--validate=false", "-f", str(MANIFESTS))
    assert applied.returncode == 0, applied.stderr
    for doc in documents():
        kind, name = doc["kind"].lower(), doc["metadata"]["name"]
        assert (
            f"{kind}.{doc['apiVersion'].split('/')[0]}/{name}" in applied.stdout
            or f"{kind}/{name}" in applied.stdout
        )
    again = kubectl(kube_cluster, tmp_path, "apply", "--validate=false", "-f", str(MANIFESTS))
    assert again.returncode == 0, again.stderr
    assert "unchanged" in again.stdout
    got = kubectl(kube_cluster, tmp_path, "get", "daemonset", "-n", "mcd", "mcd", "-o", "name")
    assert got.stdout.strip() == "daemonset.apps/mcd"


def test_daemonset_runs_privileged_on_every_node_with_probes() -> None:
    ds = next(d for d in documents() if d["kind"] == "DaemonSet")
    pod = ds["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert pod["hostPID"] and pod["hostNetwork"]
    assert pod["priorityClassName"] == "system-node-critical"
    assert pod["terminationGracePeriodSeconds"] == 600
    assert pod["tolerations"] == [{"operator": "Exists"}]
    assert container["securityContext"]["privileged"] is True
    assert container["args"][0] == "start" and "--root-mount=/rootfs" in container["args"]
    env = {e["name"]: e for e in container["env"]}
    assert env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
    mount = container["volumeMounts"][0]
    assert (mount["mountPath"], mount["mountPropagation"]) == ("/rootfs", "HostToContainer")
    assert pod["volumes"][0]["hostPath"]["path"] == "/"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    metrics = next(a for a in container["args"] if a.startswith("--metrics-url="))
    assert metrics.endswith(f":{container['livenessProbe']['httpGet']['port']}")
    assert container["resources"]["requests"]["memory"]
