"""Own-Node admission (issue 17): ``daemonset/base/07-own-node-admission.yaml`` lets mcd's
ServiceAccount change only the Node its token is bound to. Proven on a real kube-apiserver
(``MCD_TEST_KUBECONFIG``, with kube-controller-manager for the DaemonSet pod): the agent runs
with the token of a DaemonSet pod on its node, as it does in the cluster, and a whole update
passes; the same token's write to another Node is denied with the policy's message."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from mcd.cluster.api import ApiError, Kube, load_client
from mcd.cluster.node import annotations_of
from mcd.model.reboots.requests import DONE_ANNOTATION, REQUESTED_ANNOTATION, REQUIRED_ANNOTATION
from mcd.model.vocabulary import Annotation
from tests.e2e.configs import worker
from tests.e2e.conftest import NodeFactory
from tests.e2e.harness import AgentNode, create_config
from tests.e2e.scenarios import boot_on
from tests.fakes.kubecluster import TestCluster, eventually
from tests.integration.test_kubectl import kubectl

DAEMONSET = Path(__file__).resolve().parents[2] / "daemonset"
INSTALL = [
    "base/00-namespace.yaml",
    "kubernetes/01-machineconfig-crd.yaml",
    "base/02-rbac.yaml",
    "kubernetes/05-controller-rbac.yaml",
    "kubernetes/08-machineconfignode-crd.yaml",
]
POLICY = DAEMONSET / "base" / "07-own-node-admission.yaml"
NODE_NAME_EXTRA = "authentication.kubernetes.io/node-name"
AGENT_ATTR = "agent_kubeconfig"  # the agents' own kubeconfig in a real-cluster session
DENIED = "mcd's ServiceAccount may change only the node its token is bound to"

Obj = dict[str, Any]


def _plural(kind: str) -> str:
    return {"Namespace": "namespaces", "CustomResourceDefinition": "customresourcedefinitions",
            "ServiceAccount": "serviceaccounts", "ClusterRole": "clusterroles",
            "ClusterRoleBinding": "clusterrolebindings", "Role": "roles",
            "RoleBinding": "rolebindings",
            "ValidatingAdmissionPolicy": "validatingadmissionpolicies",
            "ValidatingAdmissionPolicyBinding": "validatingadmissionpolicybindings"}[kind]  # fmt: skip


def _path(doc: Obj) -> str:
    version, meta = doc["apiVersion"], doc["metadata"]
    base = f"/apis/{version}" if "/" in version else f"/api/{version}"
    ns = f"/namespaces/{meta['namespace']}" if meta.get("namespace") else ""
    return f"{base}{ns}/{_plural(doc['kind'])}/{meta['name']}"


@pytest.fixture
def installed(kube_cluster: TestCluster, tmp_path: Path) -> Iterator[None]:
    """The namespace, CRD, RBAC (when missing) and the policy, applied with the real kubectl;
    whatever was not there before is deleted after."""
    if kube_cluster.fake is not None:
        pytest.skip("own-Node admission needs a real kube-apiserver (MCD_TEST_KUBECONFIG)")
    files = [DAEMONSET / f for f in INSTALL] + [POLICY]
    added: list[str] = []
    for f in files:
        for doc in (d for d in yaml.safe_load_all(f.read_text()) if d):
            if not present(kube_cluster.kube, _path(doc)):
                added.append(_path(doc))
    try:
        applied = kubectl(
            kube_cluster, tmp_path, "apply", *(a for f in files for a in ("-f", str(f)))
        )
        assert applied.returncode == 0, applied.stderr
        yield
    finally:
        for path in reversed(added):
            with contextlib.suppress(ApiError):
                kube_cluster.kube.request("DELETE", path)
        for path in added:  # the cluster as it was found, not half-deleted for the next test
            with contextlib.suppress(ApiError):
                present(kube_cluster.kube, path, timeout=60.0)


def present(kube: Kube, path: str, timeout: float = 120.0) -> bool:
    """Whether the object is there; one still being deleted (the last run's namespace) is
    waited for until it is gone."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            obj = kube.request("GET", path)
        except ApiError as e:
            if e.status == 404:
                return False
            raise
        if not obj["metadata"].get("deletionTimestamp") or time.monotonic() > deadline:
            return True
        time.sleep(0.5)


def remove_daemonset(cluster: TestCluster, name: str) -> None:
    """The DaemonSet (its pods orphaned), then its pods at once: no kubelet here finishes a
    graceful deletion, which would hold the namespace in Terminating."""
    with contextlib.suppress(ApiError):
        cluster.kube.request("DELETE", f"/apis/apps/v1/namespaces/mcd/daemonsets/{name}",
                             {"propagationPolicy": "Orphan"})  # fmt: skip
    listing = cluster.kube.request(
        "GET", "/api/v1/namespaces/mcd/pods", {"labelSelector": f"app={name}"}
    )
    for pod in listing["items"]:
        with contextlib.suppress(ApiError):
            cluster.kube.request("DELETE", f"/api/v1/namespaces/mcd/pods/{pod['metadata']['name']}",
                                 {"gracePeriodSeconds": 0})  # fmt: skip


def daemonset_pod(cluster: TestCluster, node: str) -> Obj:
    """A pod of a DaemonSet running as mcd's ServiceAccount on ``node`` (created by the real
    DaemonSet controller; bound to the node as the scheduler would)."""
    label = {"mcd-own-node-test": cluster.suffix}
    cluster.kube.request(
        "PATCH", f"/api/v1/nodes/{node}", body={"metadata": {"labels": label}},
        content_type="application/merge-patch+json",
    )  # fmt: skip
    name = cluster.name("mcd-own")
    cluster.kube.request("POST", "/apis/apps/v1/namespaces/mcd/daemonsets", body={
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name},
        "spec": {"selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}}, "spec": {
                     "serviceAccountName": "mcd", "nodeSelector": label,
                     "tolerations": [{"operator": "Exists"}], "terminationGracePeriodSeconds": 1,
                     "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9"}]}}},
    })  # fmt: skip
    pods: list[Obj] = []

    def created() -> bool:
        listing = cluster.kube.request(
            "GET", "/api/v1/namespaces/mcd/pods", {"labelSelector": f"app={name}"}
        )
        pods[:] = listing["items"]
        return bool(pods)

    if not eventually(created, timeout=30):
        pytest.skip("no DaemonSet controller in this cluster (start it with KAS_KCM=1)")
    pod = pods[0]
    if not pod["spec"].get("nodeName"):  # no scheduler here: bind it as the scheduler would
        bind_once(cluster, pod, node)
    return pod


def bind_once(cluster: TestCluster, pod: Obj, node: str) -> None:
    """Bind the pod to ``node``; one the DaemonSet controller bound meanwhile stays so."""
    try:
        cluster.kube.request(
            "POST", f"/api/v1/namespaces/mcd/pods/{pod['metadata']['name']}/binding",
            body={"apiVersion": "v1", "kind": "Binding", "metadata": {"name": pod["metadata"]["name"]},
                  "target": {"apiVersion": "v1", "kind": "Node", "name": node}},
        )  # fmt: skip
    except ApiError as e:
        if e.status != 409 or f'already assigned to node "{node}"' not in str(e):
            raise


def bound_kubeconfig(
    cluster: TestCluster, pod: Obj | None, path: Path, service_account: str = "mcd"
) -> Path:
    """A kubeconfig with a token of mcd's ServiceAccount bound to ``pod``, as the kubelet
    projects into the DaemonSet's pods (``None``: bound to no object)."""
    spec: Obj = {"expirationSeconds": 3600}
    if pod is not None:
        spec["boundObjectRef"] = {"apiVersion": "v1", "kind": "Pod",
                                  "name": pod["metadata"]["name"], "uid": pod["metadata"]["uid"]}  # fmt: skip
    review = cluster.kube.request(
        "POST",
        f"/api/v1/namespaces/mcd/serviceaccounts/{service_account}/token",
        body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec},
    )
    admin = yaml.safe_load(Path(cluster.kubeconfig).read_text())
    context = next(c for c in admin["contexts"] if c["name"] == admin["current-context"])
    server = next(c for c in admin["clusters"] if c["name"] == context["context"]["cluster"])
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "clusters": [server],
        "users": [{"name": "mcd", "user": {"token": review["status"]["token"]}}],
        "contexts": [{"name": "mcd", "context": {"cluster": server["name"], "user": "mcd"}}],
        "current-context": "mcd",
    }))  # fmt: skip
    path.chmod(0o600)
    return path


def annotate_as(kube: Kube, node: str, key: str = "mcd-own-node-test/probe") -> ApiError | None:
    try:
        kube.request(
            "PATCH", f"/api/v1/nodes/{node}",
            body={"metadata": {"annotations": {key: str(time.time())}}},
            content_type="application/merge-patch+json",
        )  # fmt: skip
    except ApiError as e:
        return e
    return None


def test_the_agent_changes_its_own_node_and_no_other(
    installed: None, make_node: NodeFactory, kube_cluster: TestCluster, tmp_path: Path
) -> None:
    node = make_node("own", drain_mode="self")
    other = kube_cluster.node("other")
    try:
        pod = daemonset_pod(kube_cluster, node.name)
        run_the_proof(kube_cluster, node, other, pod, tmp_path)
    finally:
        remove_daemonset(kube_cluster, kube_cluster.name("mcd-own"))


def run_the_proof(
    kube_cluster: TestCluster, node: AgentNode, other: str, pod: Obj, tmp_path: Path
) -> None:
    pod = kube_cluster.kube.request("GET", f"/api/v1/namespaces/mcd/pods/{pod['metadata']['name']}")
    assert pod["spec"]["nodeName"] == node.name
    token = bound_kubeconfig(kube_cluster, pod, tmp_path / "bound.kubeconfig")
    agent = Kube(load_client(str(token)))

    # what the real kube-apiserver says about the pod-bound token
    who = agent.request("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", body={
        "apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})["status"]["userInfo"]  # fmt: skip
    print(
        "userInfo:",
        who["username"],
        {k: v for k, v in who["extra"].items() if "node" in k or "pod-name" in k},
    )
    assert who["username"] == "system:serviceaccount:mcd:mcd"
    assert who["extra"][NODE_NAME_EXTRA] == [node.name]

    # the policy is enforced once the API server's informer has it
    denials: list[ApiError] = []

    def enforced() -> bool:
        e = annotate_as(agent, other)
        if e is not None:
            denials.append(e)
        return e is not None

    assert eventually(enforced, timeout=30), "a write to another Node was allowed"
    denied = denials[-1]
    print(f"write to {other}: {denied.status} {denied}")
    assert denied.status == 403
    assert f"{DENIED} ({node.name}), not nodes/{other}" in str(denied)
    assert "mcd-own-node" in str(denied)

    # a whole update by the agent with that token: annotations, cordon, drain, Events, uncordon
    # the agents' kubeconfig (``agent_kubeconfig`` where a real-cluster session gives them one)
    saved = kube_cluster.kubeconfig
    kube_cluster.kubeconfig = token
    had_agent = hasattr(kube_cluster, AGENT_ATTR)
    saved_agent = getattr(kube_cluster, AGENT_ATTR, None)
    if had_agent:
        setattr(kube_cluster, AGENT_ATTR, token)
    try:
        boot_on(node, kube_cluster)
        target = kube_cluster.name("rendered-worker-2")
        create_config(kube_cluster, worker(target, app="threads=8\n"))
        node.set_desired(target)
        node.wait_reboot(timeout=60)
        assert kube_cluster.get_node(node.name)["spec"].get("unschedulable") is True
        node.reboot()
        node.wait_state("Done", target, timeout=60)
        node.wait_for(lambda: not kube_cluster.get_node(node.name)["spec"].get("unschedulable"))
    finally:
        kube_cluster.kubeconfig = saved
        if had_agent:
            setattr(kube_cluster, AGENT_ATTR, saved_agent)
    assert annotations_of(kube_cluster.get_node(node.name))[Annotation.CURRENT_CONFIG] == target
    assert "forbidden" not in node.log().lower()
    # its MachineConfigNode, as `kubectl get mcn` prints it (upstream's columns)
    got = kubectl(kube_cluster, tmp_path, "get", "mcn", node.name)
    print(got.stdout)
    header, row = got.stdout.splitlines()
    assert header.split() == [
        "NAME",
        "POOLNAME",
        "DESIREDCONFIG",
        "CURRENTCONFIG",
        "UPDATED",
        "AGE",
    ]
    assert row.split()[:5] == [node.name, "worker", target, target, "True"]
    # ... and not another node's: the same token may not create one for the other node
    mcn = "/apis/machineconfiguration.openshift.io/v1/machineconfignodes"
    with pytest.raises(ApiError) as other_mcn:
        agent.request("POST", mcn, body={
            "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigNode",
            "metadata": {"name": other},
            "spec": {"node": {"name": other}, "pool": {"name": "worker"},
                     "configVersion": {"desired": target}}})  # fmt: skip
    print(f"MachineConfigNode for {other}: {other_mcn.value.status} {other_mcn.value}")
    assert other_mcn.value.status == 403
    assert f"{DENIED} ({node.name}), not machineconfignodes/{other}" in str(other_mcn.value)
    with contextlib.suppress(ApiError):
        kube_cluster.kube.request("DELETE", f"{mcn}/{node.name}")

    # and the other node is as the admin left it
    assert annotate_as(agent, other, "mcd-own-node-test/after") is not None
    assert "mcd-own-node-test/after" not in annotations_of(kube_cluster.get_node(other))

    # a token of the same ServiceAccount bound to no pod changes no Node, not even this one
    loose = bound_kubeconfig(kube_cluster, None, tmp_path / "unbound.kubeconfig")
    refused = annotate_as(Kube(load_client(str(loose))), node.name)
    assert refused is not None and refused.status == 403
    print(f"unbound token, write to {node.name}: {refused.status} {refused}")
    assert f"{DENIED}: this token is not bound to a node" in str(refused)


LEASES = "/apis/coordination.k8s.io/v1/namespaces/mcd/leases"


def write_as(kube: Kube, method: str, path: str, body: Obj) -> ApiError | None:
    """One write; the API server's refusal, or None when it was allowed."""
    try:
        if method == "PATCH":
            kube.request(method, path, body=body, content_type="application/merge-patch+json")
        else:
            kube.request(method, path, body=body)
    except ApiError as e:
        return e
    return None


def lease(name: str, holder: str, version: str = "") -> Obj:
    meta: Obj = {"name": name, "namespace": "mcd"}
    if version:
        meta["resourceVersion"] = version
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": meta,
            "spec": {"holderIdentity": holder, "leaseDurationSeconds": 315360000}}  # fmt: skip


def test_a_stolen_agent_token_reaches_no_further_than_its_own_node(
    installed: None, kube_cluster: TestCluster, tmp_path: Path
) -> None:
    """Issue 28's attacks with one node's pod-bound agent token: another node's Lease or the
    controller's, a label the kubelet itself is denied, an administrator's taint, a foreign
    annotation: each denied with the policy's words; what mcd writes is still allowed. And the
    controller's token reaches no agent's Lease."""
    admin = kube_cluster.kube
    node, other = kube_cluster.node("stolen"), kube_cluster.node("victim")
    admin_taint = {"key": "dedicated", "value": "db", "effect": "NoSchedule"}
    admin.request("PATCH", f"/api/v1/nodes/{node}", body={"spec": {"taints": [admin_taint]}},
                  content_type="application/merge-patch+json")  # fmt: skip
    created: list[str] = []
    try:
        pod = daemonset_pod(kube_cluster, node)
        pod = admin.request("GET", f"/api/v1/namespaces/mcd/pods/{pod['metadata']['name']}")
        agent = Kube(load_client(str(bound_kubeconfig(kube_cluster, pod, tmp_path / "a"))))
        assert eventually(lambda: annotate_as(agent, other) is not None, timeout=30)
        own = f"/api/v1/nodes/{node}"

        # what mcd writes on its own Node stays allowed
        assert write_as(agent, "PATCH", own, {"metadata": {"annotations": {
            Annotation.STATE: "Done", "mcd-project.github.io/cordoned-by": "mcd",
            "mcd-project.github.io/joined-with": "0123456789abcdef.0a1b2c3d"}}}) is None  # fmt: skip
        assert write_as(agent, "PATCH", own, {"metadata": {"annotations": {  # the OS's wish
            REQUIRED_ANNOTATION: '{"source":"/var/run/reboot-required"}',
            DONE_ANNOTATION: '{"request":"r"}'}}}) is None  # fmt: skip
        assert write_as(agent, "PATCH", own, {"spec": {"unschedulable": True}}) is None
        assert write_as(agent, "PATCH", own, {"spec": {"unschedulable": None}}) is None

        # ... and nothing else
        attacks: dict[str, tuple[Obj, str]] = {
            "a slot for its own OS reboot": (
                {"metadata": {"annotations": {REQUESTED_ANNOTATION: "2026-01-01T00:00:00Z"}}},
                f"may change only mcd's annotations on node {node}"),
            "master label": ({"metadata": {"labels": {"node-role.kubernetes.io/master": ""}}},
                             f"may not change the labels of node {node}"),
            "node-restriction label": (
                {"metadata": {"labels": {"node-restriction.kubernetes.io/pool": "db"}}},
                f"may not change the labels of node {node}"),
            "admin taint removed": ({"spec": {"taints": []}},
                                    f"may not change the taints of node {node}"),
            "foreign annotation": ({"metadata": {"annotations": {"example.com/owner": "evil"}}},
                                   f"may change only mcd's annotations on node {node}"),
            "provider id": ({"spec": {"providerID": "evil://1"}},
                            f"spec.unschedulable and the UpdateInProgress taint of node {node}"),
        }  # fmt: skip
        for attack, (body, words) in attacks.items():
            refused = write_as(agent, "PATCH", own, body)
            print(f"{attack}: {refused}")
            assert refused is not None and refused.status == 403, attack
            assert words in str(refused), attack
        after = admin.request("GET", own)
        assert after["spec"]["taints"] == [admin_taint]
        assert "node-role.kubernetes.io/master" not in after["metadata"]["labels"]

        # Leases: its own, yes; another node's or the controller's, no
        assert write_as(agent, "POST", LEASES, lease(node, "agent")) is None
        created.append(f"{LEASES}/{node}")
        refused = write_as(agent, "POST", LEASES, lease(other, "evil"))
        assert refused is not None and refused.status == 403
        assert f"{DENIED} ({node}), not leases/{other}" in str(refused)
        for name in (other, "mcd-controller"):
            held = admin.request("POST", LEASES, body=lease(name, "rightful"))
            created.append(f"{LEASES}/{name}")
            version = held["metadata"]["resourceVersion"]
            refused = write_as(agent, "PUT", f"{LEASES}/{name}", lease(name, "evil", version))
            print(f"Lease {name}: {refused}")
            assert refused is not None and refused.status == 403
            rightful = admin.request("GET", f"{LEASES}/{name}")["spec"]["holderIdentity"]
            assert rightful == "rightful"
        assert f"{DENIED} ({node}), not leases/mcd-controller" in str(refused)

        # the controller's token: its Lease, yes; an agent's, no
        controller = Kube(load_client(str(
            bound_kubeconfig(kube_cluster, None, tmp_path / "c", "mcd-controller"))))  # fmt: skip
        current = admin.request("GET", f"{LEASES}/mcd-controller")["metadata"]["resourceVersion"]
        assert write_as(controller, "PUT", f"{LEASES}/mcd-controller",
                        lease("mcd-controller", "replica", current)) is None  # fmt: skip
        current = admin.request("GET", f"{LEASES}/{node}")["metadata"]["resourceVersion"]
        refused = write_as(controller, "PUT", f"{LEASES}/{node}", lease(node, "evil", current))
        assert refused is not None and refused.status == 403
        assert f"may change only its own Lease mcd-controller, not {node}" in str(refused)
    finally:
        remove_daemonset(kube_cluster, kube_cluster.name("mcd-own"))
        for path in created:
            with contextlib.suppress(ApiError):
                admin.request("DELETE", path)
