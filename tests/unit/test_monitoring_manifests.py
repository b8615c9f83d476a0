"""The ServiceMonitors match how the metrics are served: each selects a Service of its set whose
selector finds the pods that serve the port it names; the controller's endpoint sends a
bearer token (its /metrics off loopback answers nothing else) from a ServiceAccount bound to
``mcd-metrics-reader``; the agents' is the kube-rbac-proxy in front of exactly the loopback
address the DaemonSet's agent listens on, on the host network, with the ``node`` label."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.manifests import KUBERNETES, OPENSHIFT
from tests.manifests import objects as overlay_objects

Obj = dict[str, Any]
SETS = {
    "plain": [KUBERNETES, KUBERNETES / "monitoring"],
    "openshift": [OPENSHIFT, OPENSHIFT / "monitoring"],
}
"""Each overlay with its monitoring overlay, as a user applies them."""
TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"


def objects(dirs: list[Path]) -> list[Obj]:
    return [d for path in dirs for d in overlay_objects(path)]


def kind(objs: list[Obj], name: str) -> list[Obj]:
    return [o for o in objs if o["kind"] == name]


def matches(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def serving(objs: list[Obj], monitor: Obj) -> tuple[Obj, Obj, Obj, dict[str, Any]]:
    """The Service, the workload, its container and the endpoint a ServiceMonitor scrapes."""
    (endpoint,) = monitor["spec"]["endpoints"]
    (service,) = [s for s in kind(objs, "Service")
                  if matches(monitor["spec"]["selector"]["matchLabels"], s["metadata"]["labels"])]  # fmt: skip
    assert service["metadata"]["namespace"] in monitor["spec"]["namespaceSelector"]["matchNames"]
    (port,) = [p for p in service["spec"]["ports"] if p["name"] == endpoint["port"]]
    workloads = [w for w in kind(objs, "Deployment") + kind(objs, "DaemonSet")
                 if matches(service["spec"]["selector"],
                            w["spec"]["template"]["metadata"]["labels"])]  # fmt: skip
    (workload,) = workloads
    (container,) = [c for c in workload["spec"]["template"]["spec"]["containers"]
                    if any(p.get("name") == port["targetPort"] for p in c.get("ports", []))]  # fmt: skip
    return service, workload, container, endpoint


def arg(container: Obj, flag: str) -> str:
    (value,) = [a.split("=", 1)[1] for a in container["args"] if a.startswith(flag + "=")]
    return str(value)


def test_openshift_monitoring_scrapes_no_mcd_controller() -> None:
    """The OpenShift overlay installs no mcd controller (upstream's machine-config-controller
    runs there, scraped by upstream's own monitor): nothing to scrape, nothing bound."""
    assert not [
        o for o in objects([OPENSHIFT / "monitoring"]) if "controller" in o["metadata"]["name"]
    ]


@pytest.mark.parametrize("name", ["plain"])
def test_the_controller_is_scraped_with_a_token_it_accepts(name: str) -> None:
    objs = objects(SETS[name])
    monitor = next(
        m for m in kind(objs, "ServiceMonitor") if m["metadata"]["name"] == "mcd-controller"
    )
    _service, workload, container, endpoint = serving(objs, monitor)
    assert workload["metadata"]["name"] == "mcd-controller"
    assert not arg(container, "--metrics-url").startswith("127.")  # token auth is on (auto)
    assert endpoint["bearerTokenFile"] == TOKEN and endpoint["path"] == "/metrics"
    assert endpoint["scheme"] == "http"  # no --metrics-cert in the Deployment
    assert "--metrics-cert" not in " ".join(container["args"])
    assert "relabelings" not in endpoint  # the controller's own series carry `node`
    reader = next(
        r for r in kind(objs, "ClusterRole") if r["metadata"]["name"] == "mcd-metrics-reader"
    )
    assert reader["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]
    binding = next(b for b in kind(objs, "ClusterRoleBinding")
                   if b["metadata"]["name"] == "mcd-metrics-reader-prometheus")  # fmt: skip
    assert binding["roleRef"]["name"] == "mcd-metrics-reader"
    ((subject),) = binding["subjects"]
    assert subject["name"] == "prometheus-k8s"
    assert (
        subject["namespace"] == {"plain": "monitoring", "openshift": "openshift-monitoring"}[name]
    )


@pytest.mark.parametrize("name", SETS)
def test_the_agents_are_scraped_through_kube_rbac_proxy_on_their_node(name: str) -> None:
    objs = objects(SETS[name])
    monitor = next(m for m in kind(objs, "ServiceMonitor") if m["metadata"]["name"] == "mcd")
    _service, proxy, container, endpoint = serving(objs, monitor)
    agent = next(d for d in kind(objs, "DaemonSet") if d["metadata"]["name"] == "mcd")
    (agent_container,) = agent["spec"]["template"]["spec"]["containers"]
    listen = arg(agent_container, "--metrics-url")
    assert listen.startswith("127.0.0.1:")  # unauthenticated, so loopback only
    assert arg(container, "--upstream") == f"http://{listen}/"
    assert arg(container, "--allow-paths") == "/metrics"
    assert proxy["spec"]["template"]["spec"]["hostNetwork"] is True  # the node's loopback
    assert proxy["spec"]["template"]["spec"]["tolerations"] == [{"operator": "Exists"}]
    assert endpoint["scheme"] == "https" and endpoint["bearerTokenFile"] == TOKEN
    (relabel,) = endpoint["relabelings"]
    assert relabel["sourceLabels"] == ["node", "__meta_kubernetes_pod_node_name"]
    assert relabel["targetLabel"] == "node"
    # the proxy's ServiceAccount reviews tokens; the agents' does not
    account = proxy["spec"]["template"]["spec"]["serviceAccountName"]
    assert account != agent["spec"]["template"]["spec"]["serviceAccountName"]
    granted = {(r["apiGroups"][0], r["resources"][0]) for role in kind(objs, "ClusterRole")
               if role["metadata"]["name"] == account for r in role["rules"]}  # fmt: skip
    assert {("authentication.k8s.io", "tokenreviews"),
            ("authorization.k8s.io", "subjectaccessreviews")} <= granted  # fmt: skip
    if name == "openshift":  # the service CA's certificate, verified as upstream's monitor does
        assert endpoint["tlsConfig"]["serverName"] == "mcd-metrics.mcd.svc"
        assert arg(container, "--tls-cert-file").startswith("/etc/tls/private/")
    else:
        assert endpoint["tlsConfig"] == {"insecureSkipVerify": True}


def test_the_monitoring_sets_stay_out_of_kubectl_apply_of_the_base_sets() -> None:
    """They need the Prometheus Operator's CRDs: `kubectl apply -k daemonset/kubernetes` (and
    `oc apply -k daemonset/openshift`) must not."""
    for base in (KUBERNETES, OPENSHIFT):
        assert not [
            o for o in objects([base]) if o["apiVersion"].startswith("monitoring.coreos.com")
        ]
