"""On a real cluster (``MCD_TEST_KUBECONFIG``), the e2e agents run as the ServiceAccount in
``daemonset/`` with the shipped ClusterRole, and the real authorizer enforces it: every rule
the role grants is allowed to that identity, and what it does not grant is refused."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

from mcd.cluster.api import ApiError, Kube, Obj, load_client
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
NAMED = {"machineconfigurations": "cluster", "internalreleaseimages": "cluster"}


def namespace_for(resource: str) -> str:
    """Where the agent uses ``resource``: Nodes have none; its Leases (where
    daemonset/base/02-rbac.yaml's Role grants them) and its Events about the Node (issue 32, as
    upstream's) live in its own namespace (POD_NAMESPACE); the rest in ``default`` (the e2e
    pods it drains)."""
    return {"nodes": "", "leases": "mcd", "events": "mcd"}.get(resource, "default")


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


CONTROLLER_RBAC = RBAC.parents[1] / "kubernetes" / "05-controller-rbac.yaml"
SELF_DRAIN_RBAC = RBAC.parents[1] / "optional" / "self-drain-rbac.yaml"
EVICT = ("", "pods/eviction", "create")
PODS = [("", "pods", "list"), ("", "pods", "get")]


SCRAPERS_ROLE = "mcd-metrics-reader"  # in 05-controller-rbac.yaml, for Prometheus, not mcd


def role_rules(path: Path) -> list[Obj]:
    """The rules of the ClusterRole a file grants to mcd's own ServiceAccount."""
    (role,) = [d for d in yaml.safe_load_all(path.read_text())
               if d and d["kind"] == "ClusterRole" and d["metadata"]["name"] != SCRAPERS_ROLE]  # fmt: skip
    return list(role["rules"])


@pytest.fixture
def probe(kube_cluster: TestCluster) -> Iterator[Callable[[Path], Callable[..., bool]]]:
    """A ServiceAccount bound to one shipped ClusterRole only (a copy under a test name), and a
    question to the real authorizer (SubjectAccessReview) about what it may do."""
    if kube_cluster.fake is not None:
        pytest.skip("real RBAC needs a real cluster (MCD_TEST_KUBECONFIG)")
    admin, made = kube_cluster.kube, []
    ns = kube_cluster.namespace("rbac")

    def bound(path: Path) -> Callable[..., bool]:
        name = kube_cluster.name(f"probe-{path.stem}")
        role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": name}, "rules": role_rules(path)}  # fmt: skip
        binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                   "metadata": {"name": name},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                               "name": name},
                   "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": ns}]}  # fmt: skip
        admin.request("POST", f"/api/v1/namespaces/{ns}/serviceaccounts",
                      body={"apiVersion": "v1", "kind": "ServiceAccount",
                            "metadata": {"name": name}})  # fmt: skip
        for kind, doc in (("clusterroles", role), ("clusterrolebindings", binding)):
            admin.request("POST", f"/apis/rbac.authorization.k8s.io/v1/{kind}", body=doc)
            made.append(f"/apis/rbac.authorization.k8s.io/v1/{kind}/{name}")

        def allowed(group: str, resource: str, verb: str, namespace: str = "default") -> bool:
            res, _, sub = resource.partition("/")
            review = admin.request(
                "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", body={
                    "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                    "spec": {"user": f"system:serviceaccount:{ns}:{name}",
                             "groups": ["system:serviceaccounts", f"system:serviceaccounts:{ns}",
                                        "system:authenticated"],
                             "resourceAttributes": {"group": group, "resource": res,
                                                    "subresource": sub, "verb": verb,
                                                    "namespace": namespace}}})  # fmt: skip
            return bool(review["status"].get("allowed"))

        # the authorizer reads RBAC from its own informers: a binding made a moment ago may
        # not be in force yet (a busy CI run asked too soon and was refused what is granted)
        grant = next(
            r for r in role_rules(path) if r.get("resources") and not r.get("resourceNames")
        )
        sample = (grant["apiGroups"][0], grant["resources"][0], grant["verbs"][0], "")
        deadline = time.monotonic() + 60
        while not allowed(*sample):
            assert time.monotonic() < deadline, f"{path.name}: the binding never took effect"
            time.sleep(0.2)
        return allowed

    try:
        yield bound
    finally:
        for path in reversed(made):
            with contextlib.suppress(ApiError):
                admin.request("DELETE", path)


def test_the_agents_role_evicts_nothing_the_controllers_and_self_drains_do(
    probe: Callable[[Path], Callable[..., bool]],
) -> None:
    """Issue 28: one node's agent token could evict any pod. Now the agents' ClusterRole grants
    no eviction and no pod read, on the real authorizer; the controller's role and the opt-in
    self-drain role do."""
    agent = probe(RBAC)
    for group, resource, verb in [EVICT, *PODS]:
        assert not agent(group, resource, verb), f"the agent may {verb} {resource}"
        assert not agent(group, resource, verb, "kube-system")
    assert agent("", "nodes", "patch", ""), "the probe is bound"
    for path in (CONTROLLER_RBAC, SELF_DRAIN_RBAC):
        role = probe(path)
        for group, resource, verb in [EVICT, *PODS]:
            assert role(group, resource, verb), f"{path.name}: {verb} {resource} refused"


def test_only_the_controllers_role_deletes_machineconfigs(
    probe: Callable[[Path], Callable[..., bool]],
) -> None:
    """Issue 30: the controller prunes the rendered configs nothing uses (``--prune-grace``);
    the real authorizer lets its role delete MachineConfigs, and the agents' role not."""
    delete = ("machineconfiguration.openshift.io", "machineconfigs", "delete")
    assert probe(CONTROLLER_RBAC)(*delete, ""), "05-controller-rbac.yaml: delete refused"
    assert not probe(RBAC)(*delete, ""), "the agents may delete MachineConfigs"
