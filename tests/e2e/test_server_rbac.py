"""``mcd server`` on a real kube-apiserver (``MCD_TEST_KUBECONFIG``) with the token of its own
ServiceAccount (``daemonset/kubernetes/09-server.yaml``): the shipped RBAC lets it read the pool, the
rendered config and its join-token Secret (in the tokens' own namespace) and mark the token
used, list and watch them for its caches, and nothing else (no other Secret, even in its own
namespace; no listing Secrets elsewhere, no creating or deleting tokens, no writing pools or
Nodes)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from mcd.cluster.api import ApiError, Kube, load_client
from mcd.cluster.configs import MACHINECONFIGS
from mcd.cluster.pools import POOLS
from tests.e2e.test_own_node_admission import _path, present
from tests.fakes.kubecluster import TestCluster
from tests.integration.test_kubectl import kubectl
from tests.integration.test_server_ignition import IGN33, make_pool, start_server

DAEMONSET = Path(__file__).resolve().parents[2] / "daemonset"
INSTALL = [
    "base/00-namespace.yaml",
    "kubernetes/01-machineconfig-crd.yaml",
    "kubernetes/04-machineconfigpool-crd.yaml",
]
RBAC_KINDS = {
    "Namespace",
    "ServiceAccount",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
}
NS, SA, TOKENS_NS = "mcd", "mcd-server", "mcd-join-tokens"

Obj = dict[str, Any]


def server_rbac() -> list[Obj]:
    docs = yaml.safe_load_all((DAEMONSET / "kubernetes" / "09-server.yaml").read_text())
    return [d for d in docs if d and d["kind"] in RBAC_KINDS]


@pytest.fixture
def installed(kube_cluster: TestCluster, tmp_path: Path) -> Iterator[Path]:
    """CRDs, the namespace and the server's RBAC (what was missing is deleted after); yields
    a kubeconfig with a token of ServiceAccount mcd/mcd-server."""
    if kube_cluster.fake is not None:
        pytest.skip("RBAC needs a real kube-apiserver (MCD_TEST_KUBECONFIG)")
    rbac = tmp_path / "server-rbac.yaml"
    rbac.write_text(yaml.safe_dump_all(server_rbac()))
    files = [DAEMONSET / f for f in INSTALL] + [rbac]
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
        yield server_kubeconfig(kube_cluster, tmp_path / "server.kubeconfig")
    finally:
        for path in reversed(added):
            with contextlib.suppress(ApiError):
                kube_cluster.kube.request("DELETE", path)


def server_kubeconfig(cluster: TestCluster, path: Path) -> Path:
    review = cluster.kube.request(
        "POST", f"/api/v1/namespaces/{NS}/serviceaccounts/{SA}/token",
        body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
              "spec": {"expirationSeconds": 3600}},
    )  # fmt: skip
    admin = yaml.safe_load(cluster.kubeconfig.read_text())
    context = next(c for c in admin["contexts"] if c["name"] == admin["current-context"])
    server = next(c for c in admin["clusters"] if c["name"] == context["context"]["cluster"])
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "clusters": [server],
        "users": [{"name": SA, "user": {"token": review["status"]["token"]}}],
        "contexts": [{"name": SA, "context": {"cluster": server["name"], "user": SA}}],
        "current-context": SA,
    }))  # fmt: skip
    path.chmod(0o600)
    return path


def denied(kube: Kube, method: str, path: str, body: Obj | None = None) -> bool:
    try:
        kube.request(method, path, body=body)
    except ApiError as e:
        return e.status == 403
    return False


def test_the_server_account_serves_with_the_shipped_rbac_and_reaches_nothing_else(
    kube_cluster: TestCluster, installed: Path, tmp_path: Path
) -> None:
    pool = make_pool(kube_cluster, "rbac")
    unrelated = f"/api/v1/namespaces/{NS}/secrets/registry-creds"
    with contextlib.suppress(ApiError):
        kube_cluster.kube.request("POST", f"/api/v1/namespaces/{NS}/secrets", body={
            "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "registry-creds"},
            "stringData": {".dockerconfigjson": "{}"},
        })  # fmt: skip
    with start_server(kube_cluster, tmp_path, NS, installed, token_namespace=TOKENS_NS) as served:
        token = served.token("node-rbac", pool=pool).strip()
        status, body = served.get(
            f"/config/{pool}", {"Authorization": f"Bearer {token}", "Accept": IGN33}
        )
        assert status == 200, served.log.read_text()
        assert json.loads(body)["ignition"]["version"] == "3.3.0"
        assert served.get(f"/config/{pool}", {"Authorization": f"Bearer {token}"}) == (403, b"")
        log = served.log.read_text()
        assert "Forbidden" not in log and "403 " not in log.replace("403 Forbidden", "")
        spare = served.token("node-rbac-2", pool=pool).strip()
        as_server = Kube(load_client(str(installed)))
        token_secret = f"/api/v1/namespaces/{TOKENS_NS}/secrets/mcd-join-{spare.split('.')[1]}"
        secret = as_server.request("GET", token_secret)
        secret["metadata"].setdefault("annotations", {})["x"] = "y"
        assert as_server.request("PUT", token_secret, body=secret)["metadata"]["annotations"]
    assert denied(as_server, "GET", unrelated)
    assert denied(as_server, "PUT", unrelated, {"apiVersion": "v1", "kind": "Secret",
                                                "metadata": {"name": "registry-creds"}})  # fmt: skip
    assert not denied(as_server, "GET", f"/api/v1/namespaces/{TOKENS_NS}/secrets")  # its cache
    assert denied(as_server, "DELETE", token_secret)
    assert as_server.request("GET", f"{POOLS}/{pool}")["metadata"]["name"] == pool
    assert denied(as_server, "GET", f"/api/v1/namespaces/{NS}/secrets")
    assert denied(as_server, "GET", "/api/v1/namespaces/default/secrets/anything")
    assert denied(as_server, "POST", f"/api/v1/namespaces/{NS}/secrets",
                  {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x"}})  # fmt: skip
    assert not denied(as_server, "GET", POOLS) and not denied(as_server, "GET", MACHINECONFIGS)
    assert denied(as_server, "GET", f"/api/v1/namespaces/{NS}/configmaps")  # only by name
    assert denied(as_server, "PATCH", f"{POOLS}/{pool}")
    assert denied(as_server, "GET", "/api/v1/nodes")
