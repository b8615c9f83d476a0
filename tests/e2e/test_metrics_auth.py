"""The controller's /metrics off loopback, on a real kube-apiserver: the scraper's token is
reviewed with the controller's own ServiceAccount (the rights ``05-controller-rbac.yaml``
ships: TokenReview, SubjectAccessReview), and only a scraper bound to
``mcd-metrics-reader`` reads the metrics; the probes stay open."""

from __future__ import annotations

import contextlib
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from mcd.cluster.api import ApiError, Kube, load_client
from mcd.controller.scrapers import ScraperCheck
from mcd.controller.service import ControllerMetrics
from mcd.host.statusserver import StatusServer
from tests.e2e.test_own_node_admission import DAEMONSET, _path, bound_kubeconfig, present
from tests.fakes.kubecluster import TestCluster
from tests.integration.test_kubectl import kubectl

Obj = dict[str, Any]
SCRAPERS = "/api/v1/namespaces/mcd/serviceaccounts"


@pytest.fixture
def shipped(kube_cluster: TestCluster, tmp_path: Path) -> Iterator[None]:
    """The namespace and the controller's RBAC as shipped (what was not there is removed)."""
    if kube_cluster.fake is not None:
        pytest.skip("token and access reviews need a real kube-apiserver (MCD_TEST_KUBECONFIG)")
    files = [
        DAEMONSET / "base" / "00-namespace.yaml",
        DAEMONSET / "kubernetes" / "05-controller-rbac.yaml",
    ]
    docs = [d for f in files for d in yaml.safe_load_all(f.read_text()) if d]
    added = [_path(d) for d in docs if not present(kube_cluster.kube, _path(d))]
    try:
        applied = kubectl(kube_cluster, tmp_path, "apply", "-f", str(files[0]), "-f", str(files[1]))
        assert applied.returncode == 0, applied.stderr
        yield
    finally:
        for path in reversed(added):
            with contextlib.suppress(ApiError):
                kube_cluster.kube.request("DELETE", path)


def scrape(port: int, path: str, token: str = "") -> tuple[int, str]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_only_a_scraper_the_api_server_allows_reads_the_controllers_metrics(
    shipped: None, kube_cluster: TestCluster, tmp_path: Path
) -> None:
    admin = kube_cluster.kube
    prometheus, nobody = kube_cluster.name("prometheus"), kube_cluster.name("nobody")
    binding = f"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{prometheus}"
    created = [f"{SCRAPERS}/{prometheus}", f"{SCRAPERS}/{nobody}", binding]
    try:
        for name in (prometheus, nobody):
            admin.request("POST", SCRAPERS, body={
                "apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}})  # fmt: skip
        admin.request("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", body={
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": prometheus},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": "mcd-metrics-reader"},
            "subjects": [{"kind": "ServiceAccount", "name": prometheus, "namespace": "mcd"}]})  # fmt: skip

        def token(account: str) -> str:
            path = bound_kubeconfig(kube_cluster, None, tmp_path / account, account)
            return str(yaml.safe_load(path.read_text())["users"][0]["user"]["token"])

        reviewer = Kube(load_client(str(bound_kubeconfig(
            kube_cluster, None, tmp_path / "controller", "mcd-controller"))))  # fmt: skip
        metrics = ControllerMetrics()
        server = StatusServer(
            "127.0.0.1:0", metrics.registry, lambda: "", lambda: "",
            scrapers=ScraperCheck(reviewer),
        ).start()  # fmt: skip
        try:
            assert scrape(server.port, "/metrics")[0] == 401
            code, text = scrape(server.port, "/metrics", token(nobody))
            print("nobody:", code, text.strip())
            assert code == 403
            assert f"system:serviceaccount:mcd:{nobody} may not get /metrics" in text
            code, text = scrape(server.port, "/metrics", "not-a-token")
            assert (code, text) == (403, "Forbidden: the token is not valid\n")
            code, text = scrape(server.port, "/metrics", token(prometheus))
            print("prometheus:", code, len(text), "bytes")
            assert code == 200 and "mcd_controller_leader" in text
            assert scrape(server.port, "/healthz") == (200, "ok\n")
        finally:
            server.stop()
    finally:
        for path in created:
            with contextlib.suppress(ApiError):
                admin.request("DELETE", path)
