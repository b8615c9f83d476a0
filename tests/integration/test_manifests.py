"""The install manifests in ``daemonset/``: applied with the real kubectl to the test API server,
and checked for what the DaemonSet must carry (issue 7)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from mcd.cluster.api import ApiError
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
        with namespace_for_dry_run(kube_cluster):
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


def test_the_daemonset_asks_the_controller_to_drain() -> None:
    """The agents evict nothing by default: the controller drains (issue 28)."""
    ds = next(d for d in documents() if d["kind"] == "DaemonSet")
    (container,) = ds["spec"]["template"]["spec"]["containers"]
    assert "--drain-mode=controller" in container["args"]


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


OPENSHIFT = MANIFESTS / "openshift"
OPTIONAL = MANIFESTS / "optional"
MCO_NS = "openshift-machine-config-operator"  # where OpenShift keeps kubeconfig-data


def _sa_subjects(doc: dict[str, Any]) -> set[tuple[str, str]]:
    return {(s["namespace"], s["name"]) for s in doc["subjects"] if s["kind"] == "ServiceAccount"}


def test_openshift_set_grants_the_security_context_constraints_the_pods_need() -> None:
    grants = [
        d for p in sorted(OPENSHIFT.glob("*.yaml")) for d in yaml.safe_load_all(p.read_text()) if d
    ]
    roles = {d["metadata"]["name"]: d for d in grants if d["kind"] == "ClusterRole"}
    scc_of = {}
    for b in (d for d in grants if d["kind"] == "ClusterRoleBinding"):
        (rule,) = roles[b["roleRef"]["name"]]["rules"]
        assert (rule["apiGroups"], rule["resources"], rule["verbs"]) == (
            ["security.openshift.io"], ["securitycontextconstraints"], ["use"],
        )  # fmt: skip
        for subject in _sa_subjects(b):
            scc_of[subject] = rule["resourceNames"]
    plain = documents()
    ds = next(d for d in plain if d["kind"] == "DaemonSet")
    deploy = next(d for d in plain if d["kind"] == "Deployment")
    agent = (ds["metadata"]["namespace"], ds["spec"]["template"]["spec"]["serviceAccountName"])
    ctl = (
        deploy["metadata"]["namespace"],
        deploy["spec"]["template"]["spec"]["serviceAccountName"],
    )
    # the agent is privileged with the host's namespaces: only "privileged" admits it
    assert scc_of[agent] == ["privileged"]
    # the controller runs as a fixed non-root UID: "nonroot-v2", nothing more
    (container,) = deploy["spec"]["template"]["spec"]["containers"]
    assert container["securityContext"]["runAsUser"] != 0
    assert scc_of[ctl] == ["nonroot-v2"]
    server = ("mcd", "mcd-server")  # as the controller (daemonset/09-server.yaml)
    assert scc_of[server] == ["nonroot-v2"]
    assert set(scc_of) == {agent, ctl, server}
    namespace = next(d for d in plain if d["kind"] == "Namespace")
    assert namespace["metadata"]["annotations"]["openshift.io/node-selector"] == ""


def test_both_sets_are_accepted_by_the_api_server(
    kube_cluster: TestCluster, tmp_path: Path
) -> None:
    """Plain Kubernetes: ``-f daemonset/``; OpenShift: ``-f daemonset/ -f daemonset/openshift/``;
    opt-in self-drain: ``-f daemonset/ -f daemonset/optional/``. On a real cluster, a
    server-side dry run of each (the namespace made for it when missing)."""
    sets = [("-f", str(MANIFESTS)), ("-f", str(MANIFESTS), "-f", str(OPENSHIFT)),
            ("-f", str(MANIFESTS), "-f", str(OPTIONAL))]  # fmt: skip
    outputs: list[str] = []
    if kube_cluster.fake is not None:
        for files in sets:
            applied = kubectl(kube_cluster, tmp_path, "apply", "--validate=false", *files)
            assert applied.returncode == 0, applied.stderr
            outputs.append(applied.stdout)
        assert "clusterrolebinding.rbac.authorization.k8s.io/mcd-scc-privileged" in outputs[1]
        assert "clusterrolebinding.rbac.authorization.k8s.io/mcd-self-drain" in outputs[2]
        return
    with namespace_for_dry_run(kube_cluster), namespace_for_dry_run(kube_cluster, MCO_NS):
        for files in sets:
            dry = kubectl(kube_cluster, tmp_path, "apply", "--dry-run=server", *files)
            assert dry.returncode == 0, dry.stderr
            assert "daemonset.apps/mcd created (server dry run)" in dry.stdout or (
                "daemonset.apps/mcd configured (server dry run)" in dry.stdout
                or "daemonset.apps/mcd unchanged (server dry run)" in dry.stdout
            )
            outputs.append(dry.stdout)
        assert "clusterrolebinding.rbac.authorization.k8s.io/mcd-scc-privileged" in outputs[1]
        assert "clusterrolebinding.rbac.authorization.k8s.io/mcd-self-drain" in outputs[2]


@contextlib.contextmanager
def namespace_for_dry_run(cluster: TestCluster, name: str = "mcd") -> Iterator[None]:
    """Namespace ``name`` while a server-side dry run needs it (a dry run creates nothing):
    made when missing, and then deleted (waited for) after."""
    ns_path = f"/api/v1/namespaces/{name}"
    try:
        cluster.kube.request("GET", ns_path)
        made = False
    except ApiError as e:
        assert e.status == 404
        cluster.kube.request("POST", "/api/v1/namespaces", body={
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})  # fmt: skip
        made = True
    try:
        yield
    finally:
        if made:
            cluster.kube.request("DELETE", ns_path)
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                try:
                    cluster.kube.request("GET", ns_path)
                except ApiError:
                    break
                time.sleep(0.5)
