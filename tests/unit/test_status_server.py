"""The agent's listener: /metrics in the Prometheus format, /healthz and /readyz with causes."""

from __future__ import annotations

import socket
import ssl
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from mcd.agent.report.metrics import Metrics
from mcd.host.statusserver import StatusServer, parse_listen_address
from tests.fakes.tls import serving_context


def get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_listen_addresses() -> None:
    assert parse_listen_address("127.0.0.1:8797") == ("127.0.0.1", 8797)
    assert parse_listen_address("http://[::1]:9001/") == ("::1", 9001)
    assert parse_listen_address(":8797") == ("0.0.0.0", 8797)
    with pytest.raises(ValueError, match="expected host:port"):
        parse_listen_address("localhost")


def test_metrics_and_probes() -> None:
    metrics = Metrics()
    metrics.set_state("Degraded", "content mismatch")
    metrics.reboots_failed.inc()
    ready = ["watch of node n1 not established"]
    server = StatusServer("127.0.0.1:0", metrics.registry, lambda: "", lambda: ready[0]).start()
    try:
        code, text = get(server.port, "/metrics")
        assert code == 200
        assert 'mcd_state{reason="content mismatch",state="Degraded"}' in text
        assert "mcd_reboots_failed_total 1.0" in text
        assert "_created" not in text
        assert get(server.port, "/healthz") == (200, "ok\n")
        assert get(server.port, "/readyz") == (503, "watch of node n1 not established\n")
        ready[0] = ""
        assert get(server.port, "/readyz") == (200, "ok\n")
        assert get(server.port, "/nope")[0] == 404
    finally:
        server.stop()


def get_as(url: str, token: str = "", context: ssl.SSLContext | None = None) -> tuple[int, str]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        request = urllib.request.Request(url, headers=headers)
        with urllib.request.urlopen(request, timeout=5, context=context) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_metrics_need_a_token_the_scraper_check_accepts_and_the_probes_do_not() -> None:
    seen: list[str] = []

    def check(token: str) -> str:
        seen.append(token)
        return "" if token == "prometheus" else "system:serviceaccount:x:y may not get /metrics"

    metrics = Metrics()
    server = StatusServer(
        "127.0.0.1:0", metrics.registry, lambda: "", lambda: "", scrapers=check
    ).start()
    base = f"http://127.0.0.1:{server.port}"
    try:
        code, text = get_as(f"{base}/metrics")
        assert (code, text) == (401, "Unauthorized: /metrics needs a bearer token\n")
        code, text = get_as(f"{base}/metrics", "intruder")
        assert code == 403
        assert text == "Forbidden: system:serviceaccount:x:y may not get /metrics\n"
        code, text = get_as(f"{base}/metrics", "prometheus")
        assert code == 200 and "mcd_state" in text
        assert get_as(f"{base}/healthz") == (200, "ok\n")  # a kubelet's probe has no token
        assert get_as(f"{base}/readyz") == (200, "ok\n")
        assert seen == ["intruder", "prometheus"]
    finally:
        server.stop()


def test_the_listener_speaks_tls_with_the_certificate_given(tmp_path: Path) -> None:
    ca, _ = serving_context(tmp_path)
    metrics = Metrics()
    server = StatusServer(
        "127.0.0.1:0", metrics.registry, lambda: "", lambda: "",
        tls=(str(ca), str(tmp_path / "server.key")),
    ).start()  # fmt: skip
    try:
        client = ssl.create_default_context(cafile=str(ca))
        assert get_as(f"https://127.0.0.1:{server.port}/healthz", context=client) == (200, "ok\n")
        with pytest.raises(OSError):
            get_as(f"http://127.0.0.1:{server.port}/healthz")  # no plain HTTP beside it
        silent = socket.create_connection(("127.0.0.1", server.port))  # says nothing
        try:
            assert get_as(f"https://127.0.0.1:{server.port}/healthz", context=client)[0] == 200
        finally:
            silent.close()
    finally:
        server.stop()
