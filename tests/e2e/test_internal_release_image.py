"""``status.internalReleaseImage`` of the MachineConfigNode, as upstream's InternalReleaseImage
manager fills it (``pkg/daemon/internalreleaseimage``): on a node whose local release
registry was activated (``/var/lib/iri-registry``), with the InternalReleaseImage ``cluster``
present, the registry's bundle is reported with its release image ``Available`` and the node
``InternalReleaseImageDegraded`` False; a release whose manifest the registry no longer has is
``Degraded`` (``ReleaseImageNotFound``, the registry's 404 in the message), a registry that
does not answer degrades every release (``RegistryUnreachable``); with the InternalReleaseImage
deleted and the registry stopped, the field and the condition go. The registry is a TLS stub
on 127.0.0.1 speaking the Docker Registry v2 API, with the kubelet's pull secret entry for it
and its CA where the host keeps the IRI root CA. On the fake API server and a real one
(upstream's InternalReleaseImage CRD)."""

from __future__ import annotations

import base64
import contextlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from mcd.cluster.api import ApiError
from tests.e2e.conftest import NodeFactory
from tests.e2e.harness import AgentNode
from tests.e2e.scenarios import boot_on
from tests.fakes.kubecluster import TestCluster
from tests.fakes.realcluster import install_crd
from tests.fakes.tls import serving_context

Obj = dict[str, Any]
IRI = "/apis/machineconfiguration.openshift.io/v1/internalreleaseimages"
MCN = "/apis/machineconfiguration.openshift.io/v1/machineconfignodes"
CRD = Path(__file__).resolve().parents[1] / "data/upstream/internalreleaseimages.crd.yaml"
BUNDLE = "ocp-release-bundle-4.21.0-x86_64"
DIGEST = "4" * 64
TOKEN = base64.b64encode(b"iri:secret").decode()


class Registry:
    """The node's ``iri-registry``: ``/v2``, the two repositories' tags and the release
    manifest, for the kubelet's credentials only."""

    def __init__(self, directory: Path) -> None:
        self.ca, context = serving_context(directory)
        self.manifest = True
        registry = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                if self.headers.get("Authorization") != f"Basic {TOKEN}":
                    return self._send(401, {"errors": [{"code": "UNAUTHORIZED",
                                                        "message": "authentication required"}]})  # fmt: skip
                repos = {"/v2/openshift/release-bundles/tags/list": [BUNDLE],
                         "/v2/openshift/release-images/tags/list": [DIGEST]}  # fmt: skip
                if self.path in ("/v2", "/v2/"):
                    return self._send(200, {})
                if self.path in repos:
                    name = self.path[len("/v2/") : -len("/tags/list")]
                    return self._send(200, {"name": name, "tags": repos[self.path]})
                wanted = f"/v2/openshift/release-images/manifests/sha256:{DIGEST}"
                if self.path == wanted and registry.manifest:
                    return self._send(200, {"schemaVersion": 2})
                self._send(404, {"errors": [{"code": "MANIFEST_UNKNOWN",
                                             "message": "manifest unknown", "detail": {}}]})  # fmt: skip

            def _send(self, code: int, doc: Obj) -> None:
                body = json.dumps(doc).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.address = f"127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        if self.thread.is_alive():
            self.server.shutdown()
            self.thread.join(5)
        self.server.server_close()


@pytest.fixture
def iri_api(kube_cluster: TestCluster) -> Iterator[None]:
    """Upstream's InternalReleaseImage CRD on a real kube-apiserver (the fake serves the kind);
    the ``cluster`` object removed after."""
    if kube_cluster.fake is None:
        install_crd(kube_cluster.kube, yaml.safe_load(CRD.read_text()), IRI)
    yield
    with contextlib.suppress(ApiError):
        kube_cluster.kube.request("DELETE", f"{IRI}/cluster")


def _activated(node: AgentNode, registry: Registry) -> None:
    """The host as the NoRegistryClusterInstall leaves a control-plane node (the pull secret
    with the registry's entry comes with the config: :func:`_pull_secret`)."""
    node.path("/var/lib/iri-registry").mkdir(parents=True)
    ca = node.path("/etc/pki/ca-trust/source/anchors/iri-root-ca.crt")
    ca.parent.mkdir(parents=True, exist_ok=True)
    ca.write_bytes(registry.ca.read_bytes())
    node.base_env.update(MCD_IRI_REGISTRY=registry.address, MCD_IRI_INTERVAL="0.5")


def _pull_secret(registry: Registry) -> str:
    """The kubelet's ``/var/lib/kubelet/config.json``, holding the registry's credentials."""
    return json.dumps({"auths": {registry.address: {"auth": TOKEN}}})


def _status(cluster: TestCluster, node: AgentNode) -> Obj:
    try:
        return dict(cluster.kube.request("GET", f"{MCN}/{node.name}").get("status") or {})
    except ApiError:
        return {}


def _wait(cluster: TestCluster, node: AgentNode, check: Any, what: str) -> Obj:
    node.wait_for(lambda: bool(check(_status(cluster, node))), 60, what)
    return _status(cluster, node)


def _condition(status: Obj, kind: str) -> Obj:
    found = [c for c in status.get("conditions") or [] if c.get("type") == kind]
    return found[0] if found else {}


def _release(status: Obj) -> Obj:
    releases = (status.get("internalReleaseImage") or {}).get("releases") or [{}]
    return dict(releases[0])


def _of(release: Obj, kind: str) -> tuple[str, str]:
    found = [c for c in release.get("conditions") or [] if c["type"] == kind]
    return (found[0]["status"], found[0]["reason"]) if found else ("", "")


def test_the_local_release_registry_is_reported_on_the_machine_config_node(
    make_node: NodeFactory, kube_cluster: TestCluster, iri_api: None, tmp_path: Path
) -> None:
    registry = Registry(tmp_path / "registry")
    try:
        kube_cluster.create(IRI, {
            "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "InternalReleaseImage",
            "metadata": {"name": "cluster"}, "spec": {"releases": [{"name": BUNDLE}]}})  # fmt: skip
        node = make_node()
        _activated(node, registry)
        boot_on(node, kube_cluster, secret=_pull_secret(registry))

        status = _wait(kube_cluster, node, lambda s: _of(_release(s), "Available")[0] == "True",
                       "the bundle Available")  # fmt: skip
        release = _release(status)
        assert (release["name"], release["image"]) == (
            BUNDLE, f"{registry.address}/openshift/release-images@sha256:{DIGEST}")  # fmt: skip
        assert _of(release, "Degraded") == ("False", "ReleaseImageAvailable")
        node_condition = _condition(status, "InternalReleaseImageDegraded")
        assert (node_condition["status"], node_condition["reason"], node_condition["message"]) == (
            "False", "AllReleasesAvailable", "All the release images are available")  # fmt: skip
        assert _condition(status, "Updated")["status"] == "True"  # the phases are kept

        registry.manifest = False  # the release image is gone from the registry
        status = _wait(kube_cluster, node, lambda s: _of(_release(s), "Degraded")[0] == "True",
                       "the release Degraded")  # fmt: skip
        release = _release(status)
        assert _of(release, "Available") == ("False", "ReleaseImageNotFound")
        degraded = next(c for c in release["conditions"] if c["type"] == "Degraded")
        assert "failed with code 404. Message: manifest unknown" in degraded["message"]
        node_condition = _condition(status, "InternalReleaseImageDegraded")
        assert (node_condition["status"], node_condition["message"]) == (
            "True", "One or more release bundle are not available")  # fmt: skip

        registry.stop()  # the registry does not answer
        status = _wait(kube_cluster, node, lambda s: _condition(
            s, "InternalReleaseImageDegraded").get("reason") == "RegistryUnreachable",
            "the registry unreachable")  # fmt: skip
        assert _of(_release(status), "Available") == ("False", "RegistryUnreachable")

        kube_cluster.kube.request("DELETE", f"{IRI}/cluster")  # gone, its registry stopped
        status = _wait(kube_cluster, node, lambda s: "internalReleaseImage" not in s,
                       "the field removed")  # fmt: skip
        assert not _condition(status, "InternalReleaseImageDegraded")
        assert _condition(status, "Updated")["status"] == "True"
        assert node.state() == "Done"
    finally:
        registry.stop()


def test_a_node_whose_registry_was_never_active_reports_nothing_and_asks_nothing(
    make_node: NodeFactory, kube_cluster: TestCluster, iri_api: None
) -> None:
    """Upstream's ``wasFeatureActivated``: no ``/var/lib/iri-registry``, no work at all."""
    kube_cluster.create(IRI, {
        "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "InternalReleaseImage",
        "metadata": {"name": "cluster"}, "spec": {"releases": [{"name": BUNDLE}]}})  # fmt: skip
    node = make_node()
    node.base_env.update(MCD_IRI_INTERVAL="0.5")
    boot_on(node, kube_cluster)
    status = _wait(kube_cluster, node, lambda s: _condition(s, "Updated"), "the MCN")
    assert "internalReleaseImage" not in status
    assert not _condition(status, "InternalReleaseImageDegraded")
    assert "InternalReleaseImage" not in node.log()
