"""``mcd join`` against a server (or a proxy) that drips its answer: the fetch fails at its
overall deadline, clearly, whatever the per-read timeout, and the first-boot unit is
bounded and retries."""

from __future__ import annotations

import configparser
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcd.server.client import FetchError, config_url, fetch
from tests.unit.test_server_http import _cert

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def dripping(tmp_path: Path) -> Iterator[tuple[int, bytes]]:
    """A TLS server on 127.0.0.1 that answers one byte every 0.5 s (each read well inside
    the 30 s per-read timeout), for as long as the client listens."""
    cert, key = _cert(tmp_path / "tls", "dripper")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()
    conns: list[socket.socket] = []

    def serve() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                raw, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            try:
                conn = context.wrap_socket(raw, server_side=True)
                conns.append(conn)
                conn.settimeout(5)
                conn.recv(65536)
                answer = b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n{" + b" " * 99999
                for byte in answer:
                    if stop.is_set():
                        break
                    conn.sendall(bytes([byte]))
                    time.sleep(0.5)
            except OSError:
                pass

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        yield listener.getsockname()[1], cert.read_bytes()
    finally:
        stop.set()
        listener.close()
        t.join(10)
        for c in conns:
            c.close()


def test_a_dripping_server_fails_the_fetch_at_its_deadline(dripping: tuple[int, bytes]) -> None:
    port, ca = dripping
    url, host, port_, path = config_url(f"https://127.0.0.1:{port}/config/worker", None)
    start = time.monotonic()
    with pytest.raises(FetchError) as e:
        fetch(url, host, port_, path, "mcdjt.x.y", ca, deadline=2.0)
    assert "no whole answer within 2s" in str(e.value)
    assert "mcdjt" not in str(e.value)
    assert time.monotonic() - start < 25  # not the drip's 14 hours


def test_the_first_boot_unit_is_bounded_and_retries() -> None:
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str  # type: ignore[assignment, method-assign]
    unit.read(ROOT / "systemd" / "mcd-join.service")
    service, section = unit["Service"], unit["Unit"]
    assert service["TimeoutStartSec"] != "infinity"
    assert service["Restart"] == "on-failure"
    assert int(section["StartLimitBurst"]) > 1 and section["StartLimitIntervalSec"]
    assert "--timeout" in service["ExecStart"]
    assert service["RestartPreventExitStatus"] == "2"  # not applicable to this host: final
