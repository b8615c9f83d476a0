"""The install as kustomize overlays (``daemonset/``): rendered by the real kubectl, applied to
the test API server with ``kubectl apply -k``, and checked for what each must and must not carry
(issue 7; issue 40: the OpenShift overlay leaves upstream's controller, server and CRDs alone)."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from mcd.cluster.api import ApiError
from tests.fakes.kubecluster import TestCluster
from tests.integration.test_kubectl import kubectl
from tests.manifests import (
    DAEMONSET,
    KUBERNETES,
    KUSTOMIZATION_KEYS,
    OPENSHIFT,
    OPTIONAL,
    OVERLAYS,
    SHIPPED_IMAGE,
    identity,
    kustomization,
    objects,
)

CRD_API = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
PLAIN_INSTALL_BEFORE = {
    ("Namespace", "", "mcd"),
    ("CustomResourceDefinition", "", "machineconfigs.machineconfiguration.openshift.io"),
    ("CustomResourceDefinition", "", "machineconfigpools.machineconfiguration.openshift.io"),
    ("CustomResourceDefinition", "", "machineconfignodes.machineconfiguration.openshift.io"),
    ("CustomResourceDefinition", "", "pinnedimagesets.machineconfiguration.openshift.io"),
    ("CustomResourceDefinition", "", "machineconfigurations.operator.openshift.io"),
    ("ServiceAccount", "mcd", "mcd"),
    ("ClusterRole", "", "mcd"),
    ("ClusterRoleBinding", "", "mcd"),
    ("Role", "mcd", "mcd-lease"),
    ("RoleBinding", "mcd", "mcd-lease"),
    ("DaemonSet", "mcd", "mcd"),
    ("ServiceAccount", "mcd", "mcd-controller"),
    ("ClusterRole", "", "mcd-controller"),
    ("ClusterRole", "", "mcd-metrics-reader"),
    ("ClusterRoleBinding", "", "mcd-controller"),
    ("Role", "mcd", "mcd-controller"),
    ("RoleBinding", "mcd", "mcd-controller"),
    ("Deployment", "mcd", "mcd-controller"),
    ("ValidatingAdmissionPolicy", "", "mcd-own-node"),
    ("ValidatingAdmissionPolicyBinding", "", "mcd-own-node"),
    ("ValidatingAdmissionPolicy", "", "mcd-controller-lease"),
    ("ValidatingAdmissionPolicyBinding", "", "mcd-controller-lease"),
    ("ServiceAccount", "mcd", "mcd-server"),
    ("ClusterRole", "", "mcd-server"),
    ("ClusterRoleBinding", "", "mcd-server"),
    ("Role", "mcd", "mcd-server"),
    ("RoleBinding", "mcd", "mcd-server"),
    ("Service", "mcd", "mcd-server"),
    ("Deployment", "mcd", "mcd-server"),
}
"""What ``kubectl apply -f daemonset/`` installed before the overlays (commit b1ac36e)."""


def documents() -> list[dict[str, Any]]:
    return objects(KUBERNETES)


def kubectl_binary() -> str:
    binary = shutil.which("kubectl")
    if binary is None:
        pytest.fail(
            "kubectl is not installed: run scripts/setup.sh (Debian package kubernetes-client)"
        )
    return binary


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_each_overlay_renders_with_kubectl_kustomize(overlay: str) -> None:
    """The kubectl the tests use (Debian's 1.20 in CI, whose kustomize is v2.0.3) renders each
    overlay, and it renders exactly the objects its files hold."""
    directory = OVERLAYS[overlay]
    assert set(kustomization(directory)) <= KUSTOMIZATION_KEYS
    rendered = subprocess.run(
        [kubectl_binary(), "kustomize", str(directory)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert rendered.returncode == 0, rendered.stderr
    docs = [d for d in yaml.safe_load_all(rendered.stdout) if d]
    got = [identity(d) for d in docs]
    assert sorted(got) == sorted(identity(d) for d in objects(directory))
    rules = [d for d in docs if d["kind"] == "PrometheusRule"]  # its runbook_urls set (vars)
    assert rules == [d for d in objects(directory) if d["kind"] == "PrometheusRule"]


def _images(docs: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return sorted((d["metadata"]["name"], c["image"]) for d in docs
                  for c in ((d.get("spec") or {}).get("template") or {}).get("spec", {})
                  .get("containers", []))  # fmt: skip


@pytest.mark.parametrize("overlay", ["kubernetes", "openshift"])
def test_mcds_image_is_set_in_the_overlay(overlay: str, tmp_path: Path) -> None:
    """The image name in the manifests is a placeholder each installing overlay sets
    (``images``): kubectl renders what :func:`objects` reads, and an overlay whose entry names
    another registry runs every mcd container from it (and no other container)."""
    shutil.copytree(DAEMONSET, tmp_path / "daemonset")
    directory = tmp_path / "daemonset" / overlay
    text = (directory / "kustomization.yaml").read_text()
    assert f"newName: {SHIPPED_IMAGE}\n" in text, "the overlay sets mcd's image"
    (directory / "kustomization.yaml").write_text(
        text.replace(f"newName: {SHIPPED_IMAGE}\n", "newName: registry.example.com/ops/mcd\n")
        .replace("newTag: 0.1.0", "newTag: 9.9.9")
    )  # fmt: skip
    for where, expected in ((OVERLAYS[overlay], f"{SHIPPED_IMAGE}:0.1.0"),
                            (directory, "registry.example.com/ops/mcd:9.9.9")):  # fmt: skip
        rendered = subprocess.run([kubectl_binary(), "kustomize", str(where)],
                                  capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
        assert rendered.returncode == 0, rendered.stderr
        got = _images([d for d in yaml.safe_load_all(rendered.stdout) if d])
        assert got == _images(objects(where))
        mine = {image for _name, image in got if "kube-rbac-proxy" not in image}
        assert mine == {expected}


@pytest.mark.parametrize("overlay", ["kubernetes/monitoring", "openshift/monitoring"])
def test_the_alerts_runbook_urls_are_set_in_the_overlay(overlay: str, tmp_path: Path) -> None:
    """Each ``runbook_url`` is the ConfigMap ``mcd-runbooks``'s ``url`` (a placeholder: mcd's
    docs/runbook.md on GitHub) then ``#<alert>``; changing that one value moves them all."""
    shutil.copytree(DAEMONSET, tmp_path / "daemonset")
    directory = tmp_path / "daemonset" / overlay
    placeholder = "https://github.com/mcd-project/mcd/blob/main/docs/runbook.md"
    settings = directory / "19-runbooks.yaml"
    assert f"url: {placeholder}\n" in settings.read_text()
    settings.write_text(settings.read_text().replace(placeholder, "https://wiki.example.com/mcd"))
    for where, base in ((OVERLAYS[overlay], placeholder),
                        (directory, "https://wiki.example.com/mcd")):  # fmt: skip
        rendered = subprocess.run([kubectl_binary(), "kustomize", str(where)],
                                  capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
        assert rendered.returncode == 0, rendered.stderr
        (rule,) = [d for d in yaml.safe_load_all(rendered.stdout)
                   if d and d["kind"] == "PrometheusRule"]  # fmt: skip
        alerts = [r for g in rule["spec"]["groups"] for r in g["rules"] if "alert" in r]
        assert len(alerts) == 11
        for alert in alerts:
            assert alert["annotations"]["runbook_url"] == f"{base}#{alert['alert'].lower()}"


def test_on_openshift_the_agents_events_go_where_upstreams_runbooks_look() -> None:
    """``openshift-machine-config-operator`` (upstream's ``NamespacedEventRecorder``), through
    the ConfigMap the DaemonSet reads as ``$MCD_EVENT_NAMESPACE``; plain Kubernetes ships no
    such ConfigMap, so the agents record in their own namespace (``$POD_NAMESPACE``)."""
    for directory, expected in ((OPENSHIFT, "openshift-machine-config-operator"),
                                (KUBERNETES, None)):  # fmt: skip
        docs = objects(directory)
        ds = next(d for d in docs if d["kind"] == "DaemonSet")
        (container,) = ds["spec"]["template"]["spec"]["containers"]
        env = {e["name"]: e for e in container["env"]}
        ref = env["MCD_EVENT_NAMESPACE"]["valueFrom"]["configMapKeyRef"]
        assert ref["optional"] is True
        found = [d["data"][ref["key"]] for d in docs if d["kind"] == "ConfigMap"
                 and identity(d) == ("ConfigMap", ds["metadata"]["namespace"], ref["name"])]  # fmt: skip
        assert found == ([expected] if expected else [])


def test_every_manifest_is_in_exactly_one_overlay_or_optional() -> None:
    listed: list[Path] = []
    for directory in [DAEMONSET / "base", *OVERLAYS.values()]:
        k = kustomization(directory)
        listed.extend((directory / f).resolve() for f in k.get("resources") or [])
    settings = {(d / f).resolve() for d in OVERLAYS.values()
                for f in kustomization(d).get("configurations") or []}  # fmt: skip
    files = [
        p.resolve() for p in DAEMONSET.rglob("*.yaml")
        if p.name != "kustomization.yaml" and OPTIONAL not in p.parents
        and p.resolve() not in settings
    ]  # fmt: skip
    assert sorted(listed) == sorted(files)


def test_the_kubernetes_overlay_installs_what_apply_f_daemonset_did() -> None:
    got = {identity(d) for d in objects(KUBERNETES)}
    assert got >= PLAIN_INSTALL_BEFORE
    assert {i for i in got if i[0] == "NetworkPolicy"} == {
        ("NetworkPolicy", "mcd", "mcd-default-deny-ingress"),
        ("NetworkPolicy", "mcd", "mcd-controller-metrics"),
        ("NetworkPolicy", "mcd", "mcd-server"),
    }


def test_the_openshift_overlay_leaves_upstreams_controller_server_and_crds_alone() -> None:
    """Upstream's machine-config-controller and -server run there and the Machine Config
    Operator owns the CRDs: the overlay holds the agent and what it needs, nothing else."""
    docs = objects(OPENSHIFT)
    kinds = {d["kind"] for d in docs}
    assert "CustomResourceDefinition" not in kinds
    assert not {"Deployment", "Service", "StatefulSet"} & kinds
    names = {d["metadata"]["name"] for d in docs}
    assert not {n for n in names if n.startswith(("mcd-controller", "mcd-server"))} - {
        "mcd-controller-lease"  # the admission policy: mcd-controller's ServiceAccount is absent
    }
    (ds,) = [d for d in docs if d["kind"] == "DaemonSet"]
    assert identity(ds) == ("DaemonSet", "mcd", "mcd")
    (container,) = ds["spec"]["template"]["spec"]["containers"]
    assert "--drain-mode=controller" in container["args"]  # upstream's controller drains
    monitoring = objects(OVERLAYS["openshift/monitoring"])
    assert not [d for d in monitoring if "controller" in d["metadata"]["name"]]


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
    assert container["args"][0] == "start" and "--root=/rootfs" in container["args"]
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


MCO_NS = "openshift-machine-config-operator"  # where OpenShift keeps kubeconfig-data


def _sa_subjects(doc: dict[str, Any]) -> set[tuple[str, str]]:
    return {(s["namespace"], s["name"]) for s in doc["subjects"] if s["kind"] == "ServiceAccount"}


def test_openshift_set_grants_the_security_context_constraints_the_pods_need() -> None:
    grants = [d for d in objects(OPENSHIFT) if d["kind"] in ("ClusterRole", "ClusterRoleBinding")]
    roles = {d["metadata"]["name"]: d for d in grants if d["kind"] == "ClusterRole"}
    scc_of = {}
    for b in (d for d in grants if d["kind"] == "ClusterRoleBinding"):
        role = roles.get(b["roleRef"]["name"])
        sccs = [
            r
            for r in (role or {}).get("rules", [])
            if "securitycontextconstraints" in r["resources"]
        ]
        if not sccs:
            continue
        (rule,) = sccs
        assert (rule["apiGroups"], rule["resources"], rule["verbs"]) == (
            ["security.openshift.io"], ["securitycontextconstraints"], ["use"],
        )  # fmt: skip
        for subject in _sa_subjects(b):
            scc_of[subject] = rule["resourceNames"]
    ds = next(d for d in objects(OPENSHIFT) if d["kind"] == "DaemonSet")
    agent = (ds["metadata"]["namespace"], ds["spec"]["template"]["spec"]["serviceAccountName"])
    # the agent is privileged with the host's namespaces: only "privileged" admits it; nothing
    # else of mcd runs there (no controller, no server), so nothing else is granted an SCC
    assert scc_of == {agent: ["privileged"]}
    namespace = next(d for d in objects(OPENSHIFT) if d["kind"] == "Namespace")
    assert namespace["metadata"]["annotations"]["openshift.io/node-selector"] == ""


def _policies_for(docs: list[dict[str, Any]], labels: dict[str, str]) -> list[dict[str, Any]]:
    return [
        p for p in docs if p["kind"] == "NetworkPolicy"
        and all(labels.get(k) == v for k, v in p["spec"]["podSelector"].get("matchLabels", {}).items())
    ]  # fmt: skip


def test_network_policies_let_in_only_what_needs_a_port() -> None:
    """Every pod of the plain install on the pod network refuses connections (a default deny),
    except: Prometheus to the controller's metrics port, any address (joining machines, through
    the NodePort) to the server's TLS port. The agents run on the host network, where no policy
    applies, and listen on loopback only."""
    docs = objects(KUBERNETES)
    ns_of = {d["metadata"]["namespace"] for d in docs if d["kind"] in ("Deployment", "DaemonSet")}
    assert ns_of == {"mcd"}
    (deny,) = [p for p in docs if p["kind"] == "NetworkPolicy" and p["spec"]["podSelector"] == {}]
    assert deny["spec"]["policyTypes"] == ["Ingress"] and not deny["spec"].get("ingress")
    allowed: dict[str, list[tuple[int, list[dict[str, Any]]]]] = {}
    for deploy in (d for d in docs if d["kind"] == "Deployment"):
        labels = deploy["spec"]["template"]["metadata"]["labels"]
        (container,) = deploy["spec"]["template"]["spec"]["containers"]
        listening = {p["containerPort"] for p in container["ports"]}
        rules = [r for p in _policies_for(docs, labels) for r in p["spec"].get("ingress", [])]
        ports = {port["port"] for r in rules for port in r["ports"]}
        assert ports == listening, deploy["metadata"]["name"]  # nothing opened that nothing serves
        probes = {container[p]["httpGet"]["port"] for p in ("livenessProbe", "readinessProbe")}
        assert probes <= listening  # the kubelet probes from the node: always let in
        allowed[deploy["metadata"]["name"]] = [
            (port["port"], r["from"]) for r in rules for port in r["ports"]
        ]
    (controller,) = allowed["mcd-controller"]
    assert controller[0] == 8798
    (prometheus,) = controller[1]
    assert prometheus["podSelector"]["matchLabels"] == {"app.kubernetes.io/name": "prometheus"}
    scraper_ns = prometheus["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"]
    monitoring = objects(KUBERNETES / "monitoring")
    binding = next(
        b for b in monitoring if b["metadata"]["name"] == "mcd-metrics-reader-prometheus"
    )
    assert {s["namespace"] for s in binding["subjects"]} == {scraper_ns}  # the same Prometheus
    (server,) = allowed["mcd-server"]
    assert server == (22623, [{"ipBlock": {"cidr": "0.0.0.0/0"}}, {"ipBlock": {"cidr": "::/0"}}])
    ds = next(d for d in docs if d["kind"] == "DaemonSet")
    assert ds["spec"]["template"]["spec"]["hostNetwork"] is True
    (agent,) = ds["spec"]["template"]["spec"]["containers"]
    assert "--metrics-url=127.0.0.1:8797" in agent["args"]


def test_kubectl_apply_k_of_the_kubernetes_overlay(
    kube_cluster: TestCluster, tmp_path: Path
) -> None:
    """``kubectl apply -k daemonset/kubernetes`` as the README says: every object created, the
    CRDs Established and served; applied again, nothing new. On a real cluster what the
    apply created is deleted after (the CRDs stay: the session's tests use the same ones),
    so the admission policies never judge another test's requests."""
    expected = [identity(d) for d in documents()]
    before = {
        i for i in expected if kube_cluster.fake is None and _exists(kube_cluster, tmp_path, i)
    }
    extra = ["--validate=false"] if kube_cluster.fake is not None else []  # the fake has no OpenAPI
    try:
        applied = kubectl(kube_cluster, tmp_path, "apply", *extra, "-k", str(KUBERNETES))
        assert applied.returncode == 0, applied.stderr
        for d in documents():
            kind, name = d["kind"].lower(), d["metadata"]["name"]
            assert (
                f"{kind}.{d['apiVersion'].split('/')[0]}/{name}" in applied.stdout
                or f"{kind}/{name}" in applied.stdout
            ), name
        if kube_cluster.fake is None:
            for crd in (d for d in documents() if d["kind"] == "CustomResourceDefinition"):
                _wait_established(kube_cluster, crd)
        again = kubectl(kube_cluster, tmp_path, "apply", *extra, "-k", str(KUBERNETES))
        assert again.returncode == 0, again.stderr
        # nothing new (a real kube-apiserver has kubectl report the ValidatingAdmissionPolicies
        # "configured" again: the client-side patch still names their lists, though `kubectl
        # diff` shows no change; the objects stay as shipped)
        assert "created" not in again.stdout, again.stdout
        got = kubectl(kube_cluster, tmp_path, "get", "daemonset", "-n", "mcd", "mcd", "-o", "name")
        assert got.stdout.strip() == "daemonset.apps/mcd"
    finally:
        if kube_cluster.fake is None:
            made = [
                i
                for i in expected
                if i not in before and i[0] not in ("CustomResourceDefinition", "Namespace")
            ]
            for kind, ns, name in reversed(made):
                kubectl(kube_cluster, tmp_path, "delete", "--ignore-not-found", "--wait=true",
                        *(["-n", ns] if ns else []), f"{kind.lower()}/{name}")  # fmt: skip


def _exists(cluster: TestCluster, tmp_path: Path, ident: tuple[str, str, str]) -> bool:
    kind, ns, name = ident
    got = kubectl(cluster, tmp_path, "get", "--ignore-not-found", "-o", "name",
                  *(["-n", ns] if ns else []), f"{kind.lower()}/{name}")  # fmt: skip
    return bool(got.stdout.strip())


def _wait_established(cluster: TestCluster, crd: dict[str, Any], timeout: float = 120.0) -> None:
    path = f"{CRD_API}/{crd['metadata']['name']}"
    served = f"/apis/{crd['spec']['group']}/v1/{crd['spec']['names']['plural']}"
    deadline = time.monotonic() + timeout
    conditions: dict[str, str] = {}
    while time.monotonic() < deadline:
        got = cluster.kube.request("GET", path)
        conditions = {
            c["type"]: c["status"] for c in (got.get("status") or {}).get("conditions") or []
        }
        if conditions.get("Established") == "True":
            with contextlib.suppress(ApiError):
                cluster.kube.request("GET", served)
                return
        time.sleep(0.2)
    raise AssertionError(f"CRD {crd['metadata']['name']} not Established and served: {conditions}")


def test_both_sets_are_accepted_by_the_api_server(
    kube_cluster: TestCluster, tmp_path: Path
) -> None:
    """Plain Kubernetes: ``apply -k daemonset/kubernetes``; OpenShift: ``apply -k
    daemonset/openshift``; opt-in self-drain: ``-f daemonset/optional/`` after the plain one.
    On a real cluster, a server-side dry run of each (the namespaces made for it when
    missing)."""
    sets = [("-k", str(KUBERNETES)), ("-k", str(OPENSHIFT)), ("-f", str(OPTIONAL))]
    outputs: list[str] = []
    if kube_cluster.fake is not None:
        for files in sets:
            applied = kubectl(kube_cluster, tmp_path, "apply", "--validate=false", *files)
            assert applied.returncode == 0, applied.stderr
            outputs.append(applied.stdout)
    else:
        with namespace_for_dry_run(kube_cluster), namespace_for_dry_run(kube_cluster, MCO_NS):
            for files in sets:
                dry = kubectl(kube_cluster, tmp_path, "apply", "--dry-run=server", *files)
                assert dry.returncode == 0, dry.stderr
                outputs.append(dry.stdout)
    for out in outputs[:2]:
        assert "daemonset.apps/mcd" in out
    assert "customresourcedefinition" in outputs[0] and "customresourcedefinition" not in outputs[1]
    assert "deployment.apps/mcd-controller" in outputs[0]
    assert "deployment" not in outputs[1] and "mcd-server" not in outputs[1]
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
