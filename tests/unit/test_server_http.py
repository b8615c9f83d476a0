"""``mcd server``'s HTTP side against hostile input: status codes as upstream's handlers,
path tricks, a 1 MB Accept header, slow clients, many concurrent requests; TLS 1.2+, no
HTTP/2, the certificate reloaded on change. A fake source stands for the cluster."""

from __future__ import annotations

import http.client
import json
import logging
import shutil
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from mcd.model.ignition.dataurl import encode_data_url
from mcd.model.ignition.served import Extras
from mcd.server.handler import Handler, pool_of
from mcd.server.listener import CertReloader, Listener
from mcd.server.source import PoolConfig, PoolNotFound
from mcd.server.tokens import SERVED, Grant, Refused

SECRET = b"pull-secret-do-not-leak"
IGN33 = "application/vnd.coreos.ignition+json;version=3.3.0, */*;q=0.1"


class FakeSource:
    def __init__(self) -> None:
        self.calls = 0
        self.fail = False

    def pool_config(self, pool_name: str) -> PoolConfig:
        self.calls += 1
        if self.fail:
            raise OSError("API server unreachable")
        if pool_name != "worker":
            raise PoolNotFound(pool_name)
        config = {
            "ignition": {"version": "3.5.0"},
            "storage": {
                "files": [{"path": "/etc/pull", "contents": {"source": encode_data_url(SECRET)}}]
            },
        }
        return PoolConfig(
            "rendered-worker-1",
            {"metadata": {"name": "rendered-worker-1"}, "spec": {"config": config}},
        )

    def extras(self) -> Extras:
        return Extras(kubelet_ca=b"CA")


@pytest.fixture
def source() -> FakeSource:
    return FakeSource()


@pytest.fixture
def server(source: FakeSource) -> Iterator[Listener]:
    listener = Listener(Handler(source), "127.0.0.1", 0, workers=4, backlog=8, timeout=1.0).start()
    try:
        yield listener
    finally:
        listener.stop()


def get(
    port: int,
    path: str,
    method: str = "GET",
    headers: dict[str, str] | None = None,
    context: ssl.SSLContext | None = None,
) -> tuple[int, dict[str, str], bytes]:
    if context is None:
        conn: http.client.HTTPConnection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    else:
        conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=10, context=context)
    try:
        conn.request(method, path, headers=headers or {})
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def test_get_and_head_of_a_pool(server: Listener) -> None:
    status, headers, body = get(server.port, "/config/worker", headers={"Accept": IGN33})
    assert status == 200 and headers["content-type"] == "application/json"
    assert int(headers["content-length"]) == len(body)
    assert json.loads(body)["ignition"]["version"] == "3.3.0"
    status, headers, body = get(server.port, "/config/worker", "HEAD", {"Accept": IGN33})
    assert status == 200 and body == b"" and int(headers["content-length"]) > 0


def test_curl_gets_spec_2_2(server: Listener) -> None:
    status, _, body = get(server.port, "/config/worker")
    assert status == 200 and json.loads(body)["ignition"]["version"] == "2.2.0"


@pytest.mark.parametrize(
    ("method", "path", "headers", "status"),
    [
        ("POST", "/config/worker", {}, 405),
        ("PUT", "/config/worker", {}, 405),
        ("DELETE", "/healthz", {}, 405),
        ("GET", "/healthz", {}, 200),
        ("HEAD", "/healthz", {}, 200),
        ("GET", "/", {}, 404),
        ("POST", "/", {}, 405),
        ("GET", "/config/", {}, 404),
        ("GET", "/config/nope", {}, 404),
        ("GET", "/config/../worker", {}, 404),
        ("GET", "/config/..", {}, 404),
        ("GET", "/config/x/worker", {}, 404),
        ("GET", "/config/x%2Fworker", {}, 404),
        ("GET", "/config/x%2fworker", {}, 404),
        ("GET", "/config/%2e%2e%2fetc", {}, 404),
        ("GET", "/config/worker%00", {}, 404),
        ("GET", "/config/%ff", {}, 404),
        ("GET", "/config/WORKER", {}, 404),
        ("GET", "/config/worker?x=../../etc", {}, 200),
        (
            "GET",
            "/config/worker",
            {"Accept": "application/vnd.coreos.ignition+json;version=4.0.0"},
            400,
        ),
        (
            "GET",
            "/config/worker",
            {"Accept": "application/vnd.coreos.ignition+json;version=1.0.0"},
            400,
        ),
    ],
)
def test_status_codes(
    server: Listener, method: str, path: str, headers: dict[str, str], status: int
) -> None:
    got, got_headers, body = get(server.port, path, method, headers)
    assert got == status
    if status != 200:
        assert body == b"" and got_headers["content-length"] == "0"


def test_pool_of_takes_one_plain_name_only() -> None:
    assert pool_of("/config/worker") == "worker"
    assert pool_of("/config/infra-1.a") == "infra-1.a"
    for path in (
        "/config/a/b",
        "/config/a%2Fb",
        "/config/..",
        "/config/a..b",
        "/config/-a",
        "/config/" + "a" * 254,
    ):
        assert pool_of(path) is None


def test_errors_are_500_with_an_empty_body_and_log_no_contents(
    server: Listener, source: FakeSource, caplog: pytest.LogCaptureFixture
) -> None:
    source.fail = True
    caplog.set_level(logging.INFO)
    status, headers, body = get(
        server.port, "/config/worker", headers={"User-Agent": "Ignition/2.14", "Accept": IGN33}
    )
    assert (status, body, headers["content-length"]) == (500, b"", "0")
    assert "Pool 'worker' requested by address:'127.0.0.1:" in caplog.text
    assert "User-Agent:'Ignition/2.14' Accept-Header: '" + IGN33 + "'" in caplog.text
    source.fail = False
    caplog.clear()
    assert (
        get(server.port, "/config/worker", headers={"Authorization": "Bearer mcdjt.0.xyz"})[0]
        == 200
    )
    assert SECRET.decode() not in caplog.text and "mcdjt" not in caplog.text


def test_a_1mb_accept_header_is_refused_before_any_lookup(
    server: Listener, source: FakeSource
) -> None:
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
        s.sendall(
            b"GET /config/worker HTTP/1.1\r\nHost: x\r\nAccept: " + b"a" * (1 << 20) + b"\r\n\r\n"
        )
        reply = s.recv(200)
    status_line = reply.split(b"\r\n")[0]
    assert status_line.startswith(b"HTTP/1.") and (
        b" 431 " in status_line or b" 400 " in status_line
    )
    assert source.calls == 0


def test_too_many_header_lines_are_refused(server: Listener, source: FakeSource) -> None:
    lines = b"".join(b"X-%d: y\r\n" % i for i in range(90))
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
        s.sendall(b"GET /config/worker HTTP/1.1\r\nHost: x\r\n" + lines + b"\r\n")
        reply = s.recv(200)
    assert b" 431 " in reply.split(b"\r\n")[0]
    assert source.calls == 0


def test_slow_clients_hold_a_worker_for_the_timeout_only_and_others_are_served(
    server: Listener,
) -> None:
    slow = [socket.create_connection(("127.0.0.1", server.port), timeout=10) for _ in range(4)]
    for s in slow:
        s.sendall(b"GET /config/worker HTTP/1.1\r\n")  # never finishes its headers
    start = time.monotonic()
    status, _, _ = get(server.port, "/healthz")
    assert status == 200
    assert time.monotonic() - start < 5.0  # the slow ones timed out (1 s) and freed their workers
    for s in slow:
        s.close()


def test_many_concurrent_requests_bounded(server: Listener) -> None:
    results: list[int] = []
    lock = threading.Lock()

    def one() -> None:
        try:
            status = get(server.port, "/config/worker", headers={"Accept": IGN33})[0]
        except OSError:
            status = -1  # closed at once: more than workers + backlog waiting
        with lock:
            results.append(status)

    threads = [threading.Thread(target=one) for _ in range(60)]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(results) == 60 and time.monotonic() - start < 30
    assert set(results) <= {200, -1} and results.count(200) >= 12
    assert threading.active_count() < 40


class FakeTokens:
    def __init__(self) -> None:
        self.used: list[str] = []

    def check(self, header: str | None, pool: str, now: datetime) -> Grant:
        if header != "Bearer good" or pool != "worker":
            raise Refused("no")
        return Grant("id1", "node-a", {})

    def mark_used(self, grant: Grant, record: dict[str, str]) -> None:
        if self.used:
            raise Refused("used")
        self.used.append(record[SERVED])


def test_tokens_refuse_before_any_lookup_and_head_tells_nothing(source: FakeSource) -> None:
    tokens = FakeTokens()
    handler = Handler(source, tokens, clock=lambda: datetime(2026, 1, 1, tzinfo=UTC))
    assert handler.respond("GET", "/config/worker", {}, "a").status == 403
    assert handler.respond("GET", "/config/nope", {}, "a").status == 403
    assert source.calls == 0
    ok = {"Authorization": "Bearer good"}
    # HEAD: the same 403 with a valid token as with none (it never tells one from the other)
    assert handler.respond("HEAD", "/config/worker", ok, "a").status == 403
    assert handler.respond("HEAD", "/config/worker", {}, "a").status == 403
    assert tokens.used == [] and source.calls == 0
    assert handler.respond("GET", "/config/worker", ok, "a").status == 200
    assert tokens.used == ["rendered-worker-1"]
    assert handler.respond("GET", "/config/worker", ok, "a").status == 403


def _cert(directory: Path, cn: str) -> tuple[Path, Path]:
    openssl = shutil.which("openssl")
    assert openssl
    directory.mkdir(parents=True, exist_ok=True)
    cert, key = directory / "tls.crt", directory / "tls.key"
    subprocess.run(
        [
            openssl,
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-days",
            "2",
            "-subj",
            f"/CN={cn}",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return cert, key


def _peer_cn(port: int, ca: Path, **ctx: object) -> tuple[str, str | None]:
    context = ssl.create_default_context(cafile=str(ca))
    context.set_alpn_protocols(["h2", "http/1.1"])
    for k, v in ctx.items():
        setattr(context, k, v)
    with (
        socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
        context.wrap_socket(raw, server_hostname="127.0.0.1") as s,
    ):
        subject = dict(x[0] for x in s.getpeercert()["subject"])  # type: ignore[index, misc]
        return str(subject["commonName"]), s.selected_alpn_protocol()


def test_tls_12_plus_no_http2_and_the_certificate_reloads_on_change(
    tmp_path: Path, source: FakeSource
) -> None:
    cert, key = _cert(tmp_path / "a", "first")
    serving = tmp_path / "serving"
    serving.mkdir()
    shutil.copy(cert, serving / "tls.crt")
    shutil.copy(key, serving / "tls.key")
    listener = Listener(
        Handler(source),
        "127.0.0.1",
        0,
        CertReloader(str(serving / "tls.crt"), str(serving / "tls.key")),
        workers=2,
    ).start()
    try:
        assert _peer_cn(listener.port, cert) == ("first", "http/1.1")
        with pytest.raises(ssl.SSLError):
            _peer_cn(
                listener.port,
                cert,
                maximum_version=ssl.TLSVersion.TLSv1_1,
                minimum_version=ssl.TLSVersion.TLSv1,
            )
        context = ssl.create_default_context(cafile=str(cert))
        status, _, body = get(
            listener.port, "/config/worker", headers={"Accept": IGN33}, context=context
        )
        assert status == 200 and body
        cert2, key2 = _cert(tmp_path / "b", "second")
        (serving / "tls.crt.new").write_bytes(cert2.read_bytes())
        (serving / "tls.key.new").write_bytes(key2.read_bytes())
        (serving / "tls.key.new").rename(serving / "tls.key")
        (serving / "tls.crt.new").rename(serving / "tls.crt")
        assert _peer_cn(listener.port, cert2)[0] == "second"
        (serving / "tls.crt").write_text("garbage")  # a broken pair keeps the previous one
        assert _peer_cn(listener.port, cert2)[0] == "second"
    finally:
        listener.stop()
