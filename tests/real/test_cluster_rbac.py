"""On a real cluster (``MCD_TEST_KUBECONFIG``), the e2e agents run as the ServiceAccount in
``daemonset/`` with the shipped ClusterRole, and the real authorizer enforces it: every rule
the role grants is allowed to that identity, and what it does not grant is refused."""

from __future__ import annotations

import pytest
import yaml

from mcd.cluster.api import ApiError, Kube, load_client
from tests.e2e.test_rbac import RBAC, granted
from tests.fakes.kubecluster import TestCluster

NOT_GRANTED = [
    ("", "nodes", "delete"), ("", "nodes", "create"), ("", "secrets", "get"),
    ("", "pods", "delete"), ("", "pods", "patch"),
    ("machineconfiguration.openshift.io", "machineconfigs", "update"),
]  # fmt: skip


@pytest.fixture
def agent(kube_cluster: TestCluster) -> Kube:
    if kube_cluster.fake is not None:
        pytest.skip("real RBAC needs a real cluster (MCD_TEST_KUBECONFIG)")
    assert kube_cluster.agent_kubeconfig != kube_cluster.kubeconfig
    return Kube(load_client(str(kube_cluster.agent_kubeconfig)))


# rules limited by resourceNames: asked about the one object they grant
NAMED = {"machineconfigurations": "cluster"}


def namespace_for(resource: str) -> str:
    """Where the agent uses ``resource``: Nodes have none; its Leases live in its own
    namespace (POD_NAMESPACE, where daemonset/02-rbac.yaml's Role grants them); the rest in
    ``default`` (Events, and the e2e pods it drains)."""
    return {"nodes": "", "leases": "mcd"}.get(resource, "default")


def allowed(kube: Kube, group: str, resource: str, verb: str) -> bool:
    name, _, sub = resource.partition("/")
    review = kube.request("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", body={
        "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"group": group, "resource": name, "subresource": sub,
                                        "name": NAMED.get(name, ""),
                                        "verb": verb, "namespace": namespace_for(name)}},
    })  # fmt: skip
    return bool(review["status"].get("allowed"))


def test_the_agents_identity_is_the_daemonsets_service_account(agent: Kube) -> None:
    sa = next(
        d for d in yaml.safe_load_all(RBAC.read_text()) if d and d["kind"] == "ServiceAccount"
    )
    who = agent.request("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", body={
        "apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})  # fmt: skip
    user = who["status"]["userInfo"]["username"]
    assert user == f"system:serviceaccount:{sa['metadata']['namespace']}:{sa['metadata']['name']}"
    assert "system:masters" not in who["status"]["userInfo"].get("groups", [])


def test_the_shipped_cluster_role_is_what_the_real_authorizer_enforces(agent: Kube) -> None:
    for group, resource, verb in sorted(granted()):
        assert allowed(agent, group, resource, verb), f"{verb} {resource} ({group}) refused"
    for group, resource, verb in NOT_GRANTED:
        assert not allowed(agent, group, resource, verb), f"{verb} {resource} allowed"
    with pytest.raises(ApiError) as refused:
        agent.request("GET", "/api/v1/namespaces/default/secrets")
    assert refused.value.status == 403
