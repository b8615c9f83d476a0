"""The agent's listener: /metrics in the Prometheus format, /healthz and /readyz with causes."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest

from mcd.agent.report.metrics import Metrics
from mcd.host.statusserver import StatusServer, parse_listen_address


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
