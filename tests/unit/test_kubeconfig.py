"""The agent's own API server configuration: what a server sees from it (credentials, client
certificates, rotated tokens) and one clear line for a kubeconfig it cannot use."""

from __future__ import annotations

import base64
import json
import os
import ssl
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from mcd.cluster.api import ConfigurationError, Kube, load_client
from mcd.cluster.wire.kubeconfig import KubeconfigError, from_file, in_cluster
from tests.fakes.tls import serving_context


class Seen(BaseHTTPRequestHandler):
    """Answers every GET with what it saw: the Authorization header and the client's cert."""

    def do_GET(self) -> None:
        peer = self.connection.getpeercert() if isinstance(self.connection, ssl.SSLSocket) else None
        rdns: Any = (peer or {}).get("subject", ())
        subject = {k: v for rdn in rdns for k, v in rdn}
        body = json.dumps({
            "authorization": self.headers.get("Authorization"),
            "user_agent": self.headers.get("User-Agent"),
            "client_cn": subject.get("commonName"),
        }).encode()  # fmt: skip
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def _openssl_cert(directory: Path, cn: str) -> tuple[Path, Path]:
    cert, key = directory / f"{cn}.crt", directory / f"{cn}.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-days", "1", "-subj", f"/CN={cn}", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return cert, key


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, Path, Path]]:
    """``(url, ca.crt, client.crt, client.key)`` of an HTTPS server that trusts that client."""
    pki = tmp_path_factory.mktemp("pki")
    ca, context = serving_context(pki)
    client_cert, client_key = _openssl_cert(pki, "system:node:worker-1")
    context.verify_mode = ssl.CERT_OPTIONAL
    context.load_verify_locations(client_cert)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Seen)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"https://127.0.0.1:{httpd.server_address[1]}", ca, client_cert, client_key
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def _kubeconfig(path: Path, cluster: dict[str, object], user: dict[str, object]) -> str:
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "k", "cluster": cluster}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
    }))  # fmt: skip
    return str(path)


def _b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def test_in_cluster_token_is_read_again_when_the_kubelet_rotates_it(
    tmp_path: Path, server: tuple[str, Path, Path, Path]
) -> None:
    url, ca, _, _ = server
    sa = tmp_path / "sa"
    sa.mkdir()
    (sa / "token").write_text("first-token")
    (sa / "ca.crt").write_bytes(ca.read_bytes())
    port = url.rsplit(":", 1)[1]
    kube = Kube(in_cluster(str(sa), {"KUBERNETES_SERVICE_HOST": "127.0.0.1",
                                     "KUBERNETES_SERVICE_PORT": port}))  # fmt: skip
    assert kube.request("GET", "/api")["authorization"] == "Bearer first-token"
    # the kubelet writes the new token beside the old one and swaps a symlink: a new file
    (sa / "token.new").write_text("second-token-longer")
    os.replace(sa / "token.new", sa / "token")
    seen = kube.request("GET", "/api")
    assert seen["authorization"] == "Bearer second-token-longer"
    assert seen["user_agent"] == "machine-config-daemon"


def test_kubeconfig_client_certificate_as_data_and_as_files(
    tmp_path: Path, server: tuple[str, Path, Path, Path]
) -> None:
    url, ca, cert, key = server
    as_data = _kubeconfig(
        tmp_path / "data",
        {"server": url, "certificate-authority-data": _b64(ca)},
        {"client-certificate-data": _b64(cert), "client-key-data": _b64(key)},
    )
    assert Kube(load_client(as_data)).request("GET", "/api")["client_cn"] == "system:node:worker-1"
    (tmp_path / "pki").mkdir()
    for f in (ca, cert, key):
        (tmp_path / "pki" / f.name).write_bytes(f.read_bytes())
    as_files = _kubeconfig(  # relative paths are relative to the kubeconfig's directory
        tmp_path / "files",
        {"server": url, "certificate-authority": f"pki/{ca.name}"},
        {"client-certificate": f"pki/{cert.name}", "client-key": f"pki/{key.name}",
         "token": "t0ken"},
    )  # fmt: skip
    seen = Kube(load_client(as_files)).request("GET", "/api")
    assert (seen["client_cn"], seen["authorization"]) == ("system:node:worker-1", "Bearer t0ken")


def test_kubeconfig_token_file_and_basic_auth(
    tmp_path: Path, server: tuple[str, Path, Path, Path]
) -> None:
    url, ca, _, _ = server
    (tmp_path / "tok").write_text("from-a-file\n")
    path = _kubeconfig(tmp_path / "kc", {"server": url, "certificate-authority": str(ca)},
                       {"tokenFile": "tok"})  # fmt: skip
    assert Kube(load_client(path)).request("GET", "/api")["authorization"] == "Bearer from-a-file"
    path = _kubeconfig(tmp_path / "kc2", {"server": url, "certificate-authority": str(ca)},
                       {"username": "admin", "password": "pw"})  # fmt: skip
    got = Kube(load_client(path)).request("GET", "/api")["authorization"]
    assert got == "Basic " + base64.b64encode(b"admin:pw").decode()


@pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")
def test_an_untrusted_server_is_refused(
    tmp_path: Path, server: tuple[str, Path, Path, Path]
) -> None:
    url, _, cert, _ = server
    path = _kubeconfig(tmp_path / "kc", {"server": url, "certificate-authority": str(cert)}, {})
    with pytest.raises(Exception, match="CERTIFICATE_VERIFY_FAILED"):
        Kube(load_client(path)).request("GET", "/api")
    insecure = _kubeconfig(tmp_path / "kc2", {"server": url, "insecure-skip-tls-verify": True}, {})
    assert Kube(load_client(insecure)).request("GET", "/api")["authorization"] is None


@pytest.mark.parametrize(
    ("cluster", "user", "line"),
    [
        ({"server": "127.0.0.1:6443"}, {}, "cluster.server: not an http(s) URL"),
        ({"server": "https://a", "certificate-authority": "nope.crt"}, {},
         "certificate-authority: "),
        ({"server": "https://a", "certificate-authority-data": "%%%"}, {},
         "certificate-authority-data: not base64"),
        ({"server": "https://a"}, {"client-certificate-data": "QQ=="},
         "user.client-key: missing beside the client certificate"),
    ],
)  # fmt: skip
def test_a_bad_kubeconfig_is_one_line_naming_the_field(
    tmp_path: Path, cluster: dict[str, object], user: dict[str, object], line: str
) -> None:
    path = _kubeconfig(tmp_path / "kc", cluster, user)
    with pytest.raises(ConfigurationError) as e:
        load_client(path)
    assert str(e.value).startswith(f"cannot load the API server configuration from {path}: ")
    assert line in str(e.value)
    assert "\n" not in str(e.value)


def test_no_current_context(tmp_path: Path) -> None:
    (tmp_path / "kc").write_text("apiVersion: v1\nkind: Config\nclusters: []\n")
    with pytest.raises(KubeconfigError, match="current-context"):
        from_file(str(tmp_path / "kc"))


def test_plain_kubeconfig_and_service_account_never_import_the_official_client(
    tmp_path: Path, server: tuple[str, Path, Path, Path]
) -> None:
    """~12 MB of an idle agent (pydantic, requests, oauthlib): only exec plugins need it."""
    url, ca, _, _ = server
    path = _kubeconfig(tmp_path / "kc", {"server": url, "certificate-authority": str(ca)},
                       {"token": "t"})  # fmt: skip
    code = (
        "import sys; from mcd.cluster.api import Kube, load_client; "
        f"Kube(load_client({path!r})).request('GET', '/api'); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('kubernetes', 'pydantic', 'requests', 'oauthlib')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_exec_plugin_goes_through_the_official_loader(
    tmp_path: Path, server: tuple[str, Path, Path, Path]
) -> None:
    url, ca, _, _ = server
    plugin = tmp_path / "plugin.py"
    plugin.write_text(
        "import json\nprint(json.dumps({'apiVersion': 'client.authentication.k8s.io/v1',"
        " 'kind': 'ExecCredential', 'status': {'token': 'from-exec'}}))\n"
    )
    exec_ = {"apiVersion": "client.authentication.k8s.io/v1", "command": sys.executable,
             "args": [str(plugin)], "interactiveMode": "Never"}  # fmt: skip
    path = _kubeconfig(tmp_path / "kc", {"server": url, "certificate-authority": str(ca)},
                       {"exec": exec_})  # fmt: skip
    assert Kube(load_client(path)).request("GET", "/api")["authorization"] == "Bearer from-exec"
