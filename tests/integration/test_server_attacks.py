"""The reported attacks on the shipped ``mcd server`` process (defaults: 10 s head deadline,
16 workers), on 127.0.0.1, over the fake API server or a real one: 20 clients trickling one
header byte every 3 s over TLS, then 300 idle TCP connections reconnecting every 10 s. The
probe (``/healthz``, as the kubelet asks it) and a join answer throughout; the process's
threads and descriptors come back to where they were."""

from __future__ import annotations

import contextlib
import http.client
import socket
import ssl
import time
from pathlib import Path

from tests.fakes.kubecluster import TestCluster
from tests.integration.test_server_ignition import IGN33, Served, make_pool, start_server
from tests.underload import probing_while


def _threads(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    raise AssertionError("no Threads")


def _fds(pid: int) -> int:
    return len(list(Path(f"/proc/{pid}/fd").iterdir()))


def _port(s: Served) -> int:
    return int(s.url.rsplit(":", 1)[1])


def probe(s: Served) -> int:
    """``/healthz`` over TLS; fails unless answered within 3 s."""
    context = ssl.create_default_context(cafile=str(s.ca))
    conn = http.client.HTTPSConnection("127.0.0.1", _port(s), timeout=3, context=context)
    try:
        conn.request("GET", "/healthz")
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def back_to(pid: int, fds: int, threads: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if _fds(pid) <= fds and _threads(pid) <= threads + 2:
            return
        time.sleep(0.5)
    assert _fds(pid) <= fds, (fds, _fds(pid))
    assert _threads(pid) <= threads + 2, (threads, _threads(pid))


def test_trickling_and_idle_clients_never_take_the_server_down(
    kube_cluster: TestCluster, tmp_path: Path
) -> None:
    namespace = kube_cluster.namespace("mcs")
    pool = make_pool(kube_cluster, "attacked")
    with start_server(kube_cluster, tmp_path, namespace, pool=pool) as s:
        pid = s.proc.pid
        assert probe(s) == 200
        join = {"Authorization": f"Bearer {s.token('node-before').strip()}", "Accept": IGN33}
        assert s.get(f"/config/{pool}", join)[0] == 200  # its API connections made
        context = ssl.create_default_context(cafile=str(s.ca))
        fds, threads = _fds(pid), _threads(pid)

        # 20 clients: TLS, then one header byte every 3 s (each read inside any read timeout)
        trickling: list[ssl.SSLSocket] = []
        for _ in range(20):
            raw = socket.create_connection(("127.0.0.1", _port(s)), timeout=10)
            trickling.append(context.wrap_socket(raw, server_hostname="127.0.0.1"))
        started = time.monotonic()
        cut: list[float] = []

        def trickle() -> None:
            head = b"GET /config/" + pool.encode() + b" HTTP/1.1\r\nHost: x\r\n"
            for byte in head:
                for t in list(trickling):
                    try:
                        t.sendall(bytes([byte]))
                    except OSError:
                        cut.append(time.monotonic() - started)
                        trickling.remove(t)
                if not trickling or time.monotonic() - started > 25:
                    return
                time.sleep(3)

        try:
            assert probing_while(trickle, lambda: probe(s), 13, 0.5) >= 10
            token = s.token("node-under-attack").strip()
            status, _ = s.get(
                f"/config/{pool}", {"Authorization": f"Bearer {token}", "Accept": IGN33}
            )
            assert status == 200  # a join, too
        finally:
            for t in trickling:
                with contextlib.suppress(OSError):
                    t.close()
        assert len(cut) == 20 and max(cut) < 25, cut  # the server cut them, at its deadline

        # 300 idle TCP connections, closed and opened again every 10 s
        held: list[socket.socket] = []

        def idle() -> None:
            for _ in range(2):
                for h in held:
                    h.close()
                held.clear()
                for _ in range(300):
                    with contextlib.suppress(OSError):
                        held.append(socket.create_connection(("127.0.0.1", _port(s)), timeout=5))
                time.sleep(6)

        try:
            assert probing_while(idle, lambda: probe(s), 12, 0.5) >= 8
        finally:
            for h in held:
                h.close()
        back_to(pid, fds, threads)
