"""A service-CA rotation landing without a reboot (issue 16): upstream
``syncControllerConfigHandler`` with ``service-ca-rotate: "true"`` on the ControllerConfig.

On the fake API server, and on a real kube-apiserver (``MCD_TEST_KUBECONFIG``) with upstream's
ControllerConfig CRD applied and the agents holding a token of mcd's ServiceAccount: there the
ConfigMap is read through the Role in ``daemonset/openshift/``, nothing more."""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from mcd.agent.sync.certsync import LAST_SYNCED
from mcd.cluster.api import USER_AGENT, ApiError
from mcd.model.certificates.serviceca import LAST_OBSERVED_SERVER_CA, SERVICE_CA_ROTATE
from mcd.model.vocabulary import Annotation
from tests.e2e.conftest import NodeFactory
from tests.e2e.harness import AgentNode
from tests.e2e.scenarios import boot_on
from tests.e2e.test_own_node_admission import present
from tests.fakes.kubecluster import TestCluster
from tests.fakes.realcluster import install_crd
from tests.integration.test_certificates import CA_A, controller_config
from tests.integration.test_kubectl import kubectl

CERTS = Path(__file__).resolve().parents[1] / "data" / "certs"
OLD = (CERTS / "openshift-service-serving-signer-1700000000.pem").read_bytes()
NEW = (CERTS / "openshift-service-serving-signer-1800000000.pem").read_bytes()
LB = (CERTS / "kube-apiserver-lb-signer.pem").read_bytes()
MCO_NS = "openshift-machine-config-operator"
CC_PATH = "/apis/machineconfiguration.openshift.io/v1/controllerconfigs"
CM_PATH = f"/api/v1/namespaces/{MCO_NS}/configmaps"
ROLE = Path(__file__).resolve().parents[2] / "daemonset/openshift/11-service-ca-rotation.yaml"
CRD = Path(__file__).resolve().parents[1] / "data/upstream/controllerconfigs.crd.yaml"
NAMESPACE = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": MCO_NS}}


@pytest.fixture
def openshift(kube_cluster: TestCluster, tmp_path: Path) -> Iterator[None]:
    """The operator's namespace; on a real kube-apiserver also upstream's ControllerConfig
    CRD (Established and served, left installed) and the Role of daemonset/openshift/ for the
    agents' ServiceAccount, applied with kubectl; what else was not there before is deleted
    after."""
    if kube_cluster.fake is not None:
        kube_cluster.create("/api/v1/namespaces", NAMESPACE)
        yield
        return
    crd = yaml.safe_load(CRD.read_text())
    role, binding = [d for d in yaml.safe_load_all(ROLE.read_text()) if d]
    rbac = f"/apis/rbac.authorization.k8s.io/v1/namespaces/{MCO_NS}"
    install_crd(kube_cluster.kube, crd, CC_PATH)  # left installed: see test_mcn_degraded
    paths = [f"/api/v1/namespaces/{MCO_NS}",
             f"{rbac}/roles/{role['metadata']['name']}",
             f"{rbac}/rolebindings/{binding['metadata']['name']}"]  # fmt: skip
    added = [p for p in paths if not present(kube_cluster.kube, p)]
    ns_file = tmp_path / "ns.yaml"
    ns_file.write_text(yaml.safe_dump(NAMESPACE))
    try:
        for files in (["-f", str(ns_file)], ["-f", str(ROLE)]):
            applied = kubectl(kube_cluster, tmp_path, "apply", "--server-side", *files)
            assert applied.returncode == 0, applied.stderr
        yield
    finally:
        for path in reversed(added):
            with contextlib.suppress(ApiError):
                kube_cluster.kube.request("DELETE", path)
        for path in added:  # the cluster as it was found
            with contextlib.suppress(ApiError):
                present(kube_cluster.kube, path, timeout=60.0)


def complete_controller_config() -> dict[str, Any]:
    """The test ControllerConfig with the fields upstream's CRD requires, and no
    resourceVersion (a real server refuses one on create)."""
    cc = controller_config("1")
    cc["metadata"] = {"name": cc["metadata"]["name"]}
    cc["spec"].update({
        "additionalTrustBundle": None, "baseOSContainerImage": "", "cloudProviderCAData": None,
        "cloudProviderConfig": "", "clusterDNSIP": "172.30.0.10", "dns": None, "images": {},
        "infra": None, "ipFamilies": "IPv4", "network": None, "proxy": None, "releaseImage": "",
        "rootCAData": base64.b64encode(OLD).decode(),
    })  # fmt: skip
    return cc


def rotating_controller_config() -> dict[str, Any]:
    """The test ControllerConfig with the annotation."""
    cc = complete_controller_config()
    cc["metadata"]["annotations"] = {SERVICE_CA_ROTATE: "true"}
    return cc


def kubeconfig(ca: bytes, user: dict[str, Any]) -> str:
    return yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "local",
        "clusters": [{"name": "local", "cluster": {
            "server": "https://api-int.example.com:6443",
            "certificate-authority-data": base64.b64encode(ca).decode()}}],
        "contexts": [{"name": "local", "context": {"cluster": "local", "user": "kubelet"}}],
        "users": [{"name": "kubelet", "user": user}],
    }, sort_keys=False)  # fmt: skip


def ca_of(path: Path) -> bytes:
    doc = yaml.safe_load(path.read_text())
    return base64.b64decode(doc["clusters"][0]["cluster"]["certificate-authority-data"])


def set_rotate(cluster: TestCluster, value: str) -> str:
    obj = cluster.kube.request("GET", f"{CC_PATH}/machine-config-controller")
    obj["metadata"].setdefault("annotations", {})[SERVICE_CA_ROTATE] = value
    updated = cluster.kube.request("PUT", f"{CC_PATH}/machine-config-controller", body=obj)
    return str(updated["metadata"]["resourceVersion"])


def set_bundle(cluster: TestCluster, bundle: bytes) -> None:
    """As the operator: binaryData, merge-patched."""
    data = {"binaryData": {"ca-bundle.crt": base64.b64encode(bundle).decode()}}
    cluster.kube.request("PATCH", f"{CM_PATH}/kubeconfig-data", body=data,
                         content_type="application/merge-patch+json")  # fmt: skip


def kubelet_jobs(node: AgentNode) -> list[str]:
    return [
        c["member"] for c in node.bus.calls("StopUnit", "StartUnit", "Reload")
        if c["member"] == "Reload" or "kubelet.service" in str(c)
    ]  # fmt: skip


@pytest.mark.fake_too("the agent's reads, from the fake's request log")
def test_service_ca_rotation_lands_without_a_reboot(
    make_node: NodeFactory, kube_cluster: TestCluster, openshift: None
) -> None:
    node = make_node(fake_systemd=True)  # the kubelet's stop/start are calls on the bus
    node.path("/etc/kubernetes").mkdir(parents=True)
    node.path("/var/lib/kubelet").mkdir(parents=True)
    node.path("/etc/systemd/system").mkdir(parents=True, exist_ok=True)
    node.path("/etc/systemd/system/kubelet.service").write_text("[Service]\nExecStart=/bin/true\n")
    host_kc = node.path("/etc/kubernetes/kubeconfig")
    host_kc.write_text(kubeconfig(OLD, {"token": "bootstrap-token-abc"}))
    host_kc.chmod(0o600)
    kubelet_kc = node.path("/var/lib/kubelet/kubeconfig")
    kubelet_kc.write_text(kubeconfig(OLD, {"client-certificate": "/var/lib/kubelet/pki/c.pem"}))
    name = boot_on(node, kube_cluster)
    kube_cluster.create(CM_PATH, {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kubeconfig-data"},
        "binaryData": {"ca-bundle.crt": base64.b64encode(OLD + NEW).decode()}})  # fmt: skip
    kube_cluster.create(CC_PATH, rotating_controller_config())

    # the operator's new bundle lands: kubeconfig CA data replaced, kubelet stopped and started
    node.wait_for(lambda: node.annotations().get(LAST_OBSERVED_SERVER_CA) == "true", 15,
                  "lastObservedServerCAAnnotation")  # fmt: skip
    node.wait_for(lambda: "StartUnit" in kubelet_jobs(node), 15, "the kubelet started again")
    assert ca_of(host_kc).strip() == (OLD + NEW).strip()
    doc = yaml.safe_load(host_kc.read_text())
    assert doc["users"] == [{"name": "kubelet", "user": {"token": "bootstrap-token-abc"}}]
    assert doc["clusters"][0]["cluster"]["server"] == "https://api-int.example.com:6443"
    assert doc["current-context"] == "local"
    assert host_kc.stat().st_mode & 0o777 == 0o600  # the mode it had
    assert ca_of(kubelet_kc) == ca_of(host_kc)
    assert yaml.safe_load(kubelet_kc.read_text())["users"][0]["user"] == {
        "client-certificate": "/var/lib/kubelet/pki/c.pem"
    }
    assert kubelet_jobs(node) == ["StopUnit", "Reload", "StartUnit"]  # upstream's order
    # the same sync wrote the ControllerConfig's own certificates (test_seams covers them)
    assert node.path("/etc/kubernetes/kubelet-ca.crt").read_bytes() == CA_A + b"\n"
    assert node.reboots_requested() == 0 and not node.events("Drain")
    assert node.state() == "Done" and node.annotations()[Annotation.CURRENT_CONFIG] == name
    log = node.log()
    assert (
        '"Cert not found in kubeconfig. This means we need to write to disk. '
        'Subject is: openshift-service-serving-signer@1800000000"' in log
    )
    assert '"Need to restart kubelet"' in log
    assert '"restarting kubelet due to server-ca rotation"' in log
    assert "MIIB" not in log and base64.b64encode(NEW).decode()[:40] not in log

    # the operator's next sync says "false": observed, nothing else happens
    set_rotate(kube_cluster, "false")
    node.wait_for(lambda: node.annotations().get(LAST_OBSERVED_SERVER_CA) == "false", 15,
                  "lastObservedServerCAAnnotation false")  # fmt: skip
    # a rotation that only adds a signer upstream lets rotate by itself: written, no restart
    set_bundle(kube_cluster, OLD + NEW + LB)
    rv = set_rotate(kube_cluster, "true")
    node.wait_for(lambda: node.annotations().get(LAST_SYNCED) == rv, 15, "lastSynced")
    assert node.annotations()[LAST_OBSERVED_SERVER_CA] == "true"
    assert ca_of(host_kc).strip() == (OLD + NEW + LB).strip()
    assert ca_of(kubelet_kc).strip() == (OLD + NEW).strip()  # the kubelet was not touched
    assert kubelet_jobs(node) == ["StopUnit", "Reload", "StartUnit"]
    assert '"Skipping kubelet restart"' in node.log()
    assert node.reboots_requested() == 0

    # the agent's reads of kubeconfig-data are what daemonset/openshift/ grants it, no more
    # (on a real kube-apiserver the agents' token had only that Role to read it with)
    if kube_cluster.fake is None:
        return
    reads = {(r.method, r.path) for r in kube_cluster.fake.requests
             if r.user_agent.startswith(USER_AGENT) and "/configmaps" in r.path}  # fmt: skip
    assert reads == {("GET", f"{CM_PATH}/kubeconfig-data")}
    role, binding = [d for d in yaml.safe_load_all(ROLE.read_text()) if d]
    assert role["metadata"]["namespace"] == binding["metadata"]["namespace"] == MCO_NS
    assert role["rules"] == [{"apiGroups": [""], "resources": ["configmaps"],
                              "resourceNames": ["kubeconfig-data"], "verbs": ["get"]}]  # fmt: skip
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "mcd", "namespace": "mcd"}]


def test_a_kubeconfig_that_cannot_be_read_is_degraded_and_the_kubelet_left_alone(
    make_node: NodeFactory, kube_cluster: TestCluster, openshift: None
) -> None:
    """Upstream returns the error (handleControllerConfigErr: Degraded); mcd names the file
    and never the data, and no kubelet is stopped."""
    node = make_node(fake_systemd=True)
    node.path("/etc/kubernetes").mkdir(parents=True)
    host_kc = node.path("/etc/kubernetes/kubeconfig")
    host_kc.write_text("clusters: [\n  secret-ish-bytes\n")
    boot_on(node, kube_cluster)
    kube_cluster.create(CM_PATH, {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kubeconfig-data"},
        "data": {"ca-bundle.crt": (OLD + NEW).decode()}})  # fmt: skip
    kube_cluster.create(CC_PATH, rotating_controller_config())
    node.wait_for(lambda: node.state() == "Degraded", 15, "Degraded by the certificate writer")
    reason = node.annotations()[Annotation.REASON]
    assert reason.startswith("/etc/kubernetes/kubeconfig: could not unmarshal kubeconfig")
    assert "secret-ish" not in reason and "secret-ish" not in node.log()
    assert LAST_OBSERVED_SERVER_CA not in node.annotations()
    assert not kubelet_jobs(node)
    assert host_kc.read_text() == "clusters: [\n  secret-ish-bytes\n"
    # the rest of the ControllerConfig was not written either (upstream returns first)
    assert not node.path("/etc/kubernetes/kubelet-ca.crt").exists()
