"""mcd start reaches the API server named by the host's kubelet kubeconfig, with the
in-cluster credentials (upstream cmd/machine-config-daemon/start.go), else the service."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from mcd.cluster.api import ConfigurationError, load_client
from mcd.cluster.events import default_namespace

KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {server: "https://api-int.example.com:6443", certificate-authority-data: ""}
- name: other
  cluster: {server: "https://wrong.example.com:1"}
contexts:
- name: kubelet
  context: {cluster: local, user: kubelet}
current-context: kubelet
users: [{name: kubelet, user: {}}]
"""
SERVICE = {"KUBERNETES_SERVICE_HOST": "172.30.0.1", "KUBERNETES_SERVICE_PORT": "443"}


@pytest.fixture
def service_account(tmp_path: Path) -> str:
    sa = tmp_path / "sa"
    sa.mkdir()
    (sa / "token").write_text("not-a-real-token")
    (sa / "ca.crt").write_text("-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n")
    return str(sa)


def test_host_kubeconfig_names_the_api_server(
    tmp_path: Path, service_account: str, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "rootfs"
    (root / "etc/kubernetes").mkdir(parents=True)
    (root / "etc/kubernetes/kubeconfig").write_text(KUBECONFIG)
    caplog.set_level(logging.INFO)
    api = load_client(environ=SERVICE, root_mount=str(root), service_account=service_account)
    assert api.host == "https://api-int.example.com:6443"
    assert "overriding kubernetes api to https://api-int.example.com:6443" in caplog.text
    assert "not-a-real-token" not in caplog.text


@pytest.mark.parametrize("kubeconfig", [None, "clusters: [oops", "current-context: missing\n"])
def test_falls_back_to_the_in_cluster_service(
    tmp_path: Path, service_account: str, kubeconfig: str | None
) -> None:
    root = tmp_path / "rootfs"
    (root / "etc/kubernetes").mkdir(parents=True)
    if kubeconfig is not None:
        (root / "etc/kubernetes/kubeconfig").write_text(kubeconfig)
    api = load_client(environ=SERVICE, root_mount=str(root), service_account=service_account)
    assert api.host == "https://172.30.0.1:443"


def test_no_service_account_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="in-cluster service account"):
        load_client(environ={}, root_mount=str(tmp_path), service_account=str(tmp_path / "x"))


def test_node_events_go_to_the_daemons_namespace_as_upstream_records_them(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Upstream's NamespacedEventRecorder: the daemon's namespace; configurable; default
    only for a host service with no namespace to go by."""
    missing = str(tmp_path / "none")
    monkeypatch.delenv("MCD_EVENT_NAMESPACE", raising=False)
    monkeypatch.delenv("POD_NAMESPACE", raising=False)
    assert default_namespace(missing) == "default"
    sa = tmp_path / "namespace"
    sa.write_text("openshift-machine-config-operator\n")
    assert default_namespace(str(sa)) == "openshift-machine-config-operator"
    monkeypatch.setenv("POD_NAMESPACE", "mcd")
    assert default_namespace(str(sa)) == "mcd"
    monkeypatch.setenv("MCD_EVENT_NAMESPACE", "ops")
    assert default_namespace(str(sa)) == "ops"
