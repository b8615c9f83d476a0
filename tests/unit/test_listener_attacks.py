"""Hostile clients against every HTTP listener (``mcd server``'s ports, the agent's and the
controller's metrics port), on 127.0.0.1, each load bounded in count and time: the probe
answers within a couple of seconds throughout, the server closes what the attacker left
open, and threads and descriptors return to where they were. Also the HTTP semantics every
listener shares: header names in any case, other methods an empty 405."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime

import pytest
from prometheus_client import CollectorRegistry

from mcd.host.statusserver import StatusServer
from mcd.server.handler import Handler
from mcd.server.listener import Listener
from mcd.server.tokens import Grant, Refused
from tests.underload import probing_while
from tests.unit.test_server_http import FakeSource

DEADLINE = 2.0  # the listeners' head deadline in these tests (10 s shipped)


class LowerCaseTokens:
    def check(self, header: str | None, pool: str, now: datetime) -> Grant:
        if header != "Bearer good":
            raise Refused("no join token")
        return Grant("id1", "node-a", {})

    def mark_used(self, grant: Grant, record: dict[str, str]) -> None:
        pass


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.fixture
def server() -> Iterator[Listener]:
    handler = Handler(
        FakeSource(), LowerCaseTokens(), clock=lambda: datetime(2026, 1, 1, tzinfo=UTC)
    )
    listener = Listener(handler, "127.0.0.1", 0, timeout=DEADLINE, max_connections=64).start()
    try:
        yield listener
    finally:
        listener.stop()


@pytest.fixture
def status() -> Iterator[StatusServer]:
    server = StatusServer(
        "127.0.0.1:0", CollectorRegistry(), lambda: "", lambda: "", deadline=DEADLINE
    ).start()
    try:
        yield server
    finally:
        server.stop()


def probe(port: int, path: str = "/healthz") -> int:
    """One probe as a kubelet sends it; fails unless answered within 3 s."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=3)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def raw(port: int, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(request)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
        return out


def closed_by_server(s: socket.socket, within: float) -> bool:
    s.settimeout(within)
    try:
        while s.recv(4096):
            pass
        return True
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def under_load(
    port: int, seconds: float, attack: Callable[[], None], path: str = "/healthz"
) -> None:
    """Run ``attack`` in a thread while probing every 0.3 s; every probe must answer 200."""
    assert probing_while(attack, lambda: probe(port, path), seconds, 0.3) >= 5


def settle(baseline_fds: int, baseline_threads: int) -> None:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if _fds() <= baseline_fds and threading.active_count() <= baseline_threads + 2:
            return
        time.sleep(0.2)
    assert _fds() <= baseline_fds, (baseline_fds, _fds())
    assert threading.active_count() <= baseline_threads + 2


@pytest.mark.parametrize("which", ["server", "status"])
def test_twenty_clients_trickling_header_bytes_are_cut_at_the_deadline(
    which: str, request: pytest.FixtureRequest
) -> None:
    """20 clients each send one header byte every 0.6 s (each read well inside any per-read
    timeout); the probe answers throughout; each trickler is closed by the server at the
    head deadline, not when it stops."""
    listener = request.getfixturevalue(which)
    port = listener.port
    probe(port)
    fds, threads = _fds(), threading.active_count()
    socks = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(20)]
    cut: list[float] = []
    start = time.monotonic()

    def trickle() -> None:
        head = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100
        for byte in head:
            for s in list(socks):
                try:
                    s.sendall(bytes([byte]))
                except OSError:
                    cut.append(time.monotonic() - start)
                    socks.remove(s)
            if not socks or time.monotonic() - start > 3 * DEADLINE:
                return
            time.sleep(0.6)

    try:
        under_load(port, 2 * DEADLINE, trickle)
        for s in socks:
            assert closed_by_server(s, DEADLINE + 3)
    finally:
        for s in socks:
            s.close()
    settle(fds, threads)


@pytest.mark.parametrize("which", ["server", "status"])
def test_hundreds_of_idle_connections_reconnecting_never_lock_the_probe_out(
    which: str, request: pytest.FixtureRequest
) -> None:
    """300 connections that send nothing, closed and opened again every second (more than
    the listener's cap): the probe answers throughout; the server closes idle ones at the
    deadline; no thread is added per connection."""
    listener = request.getfixturevalue(which)
    port = listener.port
    probe(port)
    fds, threads = _fds(), threading.active_count()
    held: list[socket.socket] = []
    most_threads = [threads]

    def flood() -> None:
        end = time.monotonic() + 2 * DEADLINE + 1
        while time.monotonic() < end:
            for s in held:
                s.close()
            held.clear()
            for _ in range(300):
                with contextlib.suppress(OSError):
                    held.append(socket.create_connection(("127.0.0.1", port), timeout=5))
            most_threads[0] = max(most_threads[0], threading.active_count())
            time.sleep(1.0)

    try:
        under_load(port, 2 * DEADLINE + 1, flood)
        assert most_threads[0] <= threads + 3, (threads, most_threads[0])
        assert listener.open_connections() <= 64
        assert closed_by_server(held[-1], DEADLINE + 3)
    finally:
        for s in held:
            s.close()
    settle(fds, threads)


def test_the_controllers_metrics_port_holds_no_thread_per_idle_connection(
    status: StatusServer,
) -> None:
    """The reported attack: 290 idle connections to the metrics port grew the controller
    from 15 to 305 threads, none closed after 60 s. Now: no thread added, all closed by the
    server within the deadline."""
    probe(status.port, "/readyz")
    fds, threads = _fds(), threading.active_count()
    socks = [socket.create_connection(("127.0.0.1", status.port), timeout=5) for _ in range(290)]
    try:
        assert threading.active_count() <= threads + 1
        assert probe(status.port, "/readyz") == 200
        assert all(closed_by_server(s, DEADLINE + 3) for s in socks[-20:])
    finally:
        for s in socks:
            s.close()
    settle(fds, threads)


@pytest.mark.parametrize("which", ["server", "status"])
@pytest.mark.parametrize(
    "line", [b"TRACE / HTTP/1.1", b"CONNECT 127.0.0.1:1 HTTP/1.1", b"BREW /healthz HTTP/1.1",
             b"POST /healthz HTTP/1.1", b"OPTIONS * HTTP/1.1"],
)  # fmt: skip
def test_other_methods_get_an_empty_405_allowing_get_and_head(
    which: str, line: bytes, request: pytest.FixtureRequest
) -> None:
    port = request.getfixturevalue(which).port
    reply = raw(port, line + b"\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
    head, _, body = reply.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (x.partition(b":") for x in lines[1:])}
    assert lines[0].split(b" ")[1] == b"405", reply[:200]
    assert headers[b"allow"] == b"GET, HEAD" and headers[b"content-length"] == b"0"
    assert body == b""


def test_header_names_in_any_case(server: Listener) -> None:
    """A proxy that lower-cases (or upper-cases) header names breaks no join."""
    reply = raw(
        server.port,
        b"GET /config/worker HTTP/1.1\r\nhost: x\r\nauthorization: Bearer good\r\n"
        b"ACCEPT: application/vnd.coreos.ignition+json;version=3.4.0\r\n\r\n",
    )
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 "), head
    assert json.loads(body)["ignition"]["version"] == "3.4.0"
    reply = raw(server.port, b"GET /config/worker HTTP/1.1\r\nHost: x\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 403 ")


def test_the_status_listener_reads_the_token_header_in_any_case() -> None:
    server = StatusServer(
        "127.0.0.1:0", CollectorRegistry(), lambda: "", lambda: "",
        scrapers=lambda token: "" if token == "t" else "no",
    ).start()  # fmt: skip
    try:
        reply = raw(
            server.port, b"GET /metrics HTTP/1.1\r\nHost: x\r\nAUTHORIZATION: bearer t\r\n\r\n"
        )
        assert reply.startswith(b"HTTP/1.1 200 "), reply[:100]
    finally:
        server.stop()
