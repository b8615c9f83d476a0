"""Plain requests to the API server on kept-alive connections (``mcd.cluster.wire.http11``),
against a server on 127.0.0.1 that answers with scripted bytes: every framing a server may
use comes back whole, a kept connection carries the next request, one the server closed is
never used, a GET (never a PATCH) cut before its answer is sent again, and a response that
breaks HTTP/1.1 is refused in one line with its connection dropped."""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcd.cluster.api import ApiError, Kube
from mcd.cluster.wire.http11 import MAX_HEADERS, MAX_LINE, BadResponse, Origin
from mcd.cluster.wire.transport import Connection, Tls
from tests.fakes.tls import serving_context

Answer = Callable[[int, bytes], "bytes | None"]
Make = Callable[..., "Scripted"]
"""(request number on this server, the request's head and body) -> the bytes to send back,
or None to close the connection without a word."""


@dataclass
class Scripted:
    """A server on 127.0.0.1 whose answers a test writes byte for byte."""

    answer: Answer
    tls: ssl.SSLContext | None = None
    pieces: int = 1
    """Each answer sent in this many pieces, a pause between them (framing split anywhere)."""
    close_after: frozenset[int] = frozenset()
    """The requests after whose answer the server closes the connection, saying nothing."""
    seen: list[tuple[int, bytes]] = field(default_factory=list)
    """(connection number, request line) of every request."""
    closed: int = 0

    def __post_init__(self) -> None:
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        self._stop = False
        self._connections: list[socket.socket] = []
        self._threads = [threading.Thread(target=self._accept, daemon=True)]
        self._threads[0].start()

    def _accept(self) -> None:
        number = 0
        while not self._stop:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            if self.tls is not None:
                try:
                    conn = self.tls.wrap_socket(conn, server_side=True)
                except (OSError, ssl.SSLError):
                    conn.close()
                    continue
            self._connections.append(conn)
            thread = threading.Thread(target=self._serve, args=(conn, number), daemon=True)
            self._threads.append(thread)
            thread.start()
            number += 1

    def _serve(self, conn: socket.socket, number: int) -> None:
        data = b""
        try:
            while True:
                while b"\r\n\r\n" not in data:
                    more = conn.recv(65536)
                    if not more:
                        return
                    data += more
                head, _, data = data.partition(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.lower() == b"content-length":
                        length = int(value)
                while len(data) < length:
                    data += conn.recv(65536)
                body, data = data[:length], data[length:]
                self.seen.append((number, head.split(b"\r\n")[0]))
                out = self.answer(len(self.seen) - 1, head + b"\r\n\r\n" + body)
                if out is None:
                    return
                step = max(1, -(-len(out) // self.pieces))
                for i in range(0, len(out), step):
                    conn.sendall(out[i : i + step])
                    if self.pieces > 1:
                        time.sleep(0.001)
                if out.startswith(b"HTTP/1.0") or b"\r\nConnection: close\r\n" in out:
                    return
                if len(self.seen) - 1 in self.close_after:
                    time.sleep(0.05)
                    return
        except OSError:
            return
        finally:
            self.closed += 1
            conn.close()

    def stop(self) -> None:
        """Every connection closed and every thread of this server ended."""
        self._stop = True
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        self._sock.close()
        for conn in self._connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            conn.close()
        for thread in self._threads:
            thread.join(5)


@pytest.fixture
def scripted() -> Iterator[Callable[..., Scripted]]:
    made: list[Scripted] = []

    def make(answer: Answer, **kwargs: object) -> Scripted:
        server = Scripted(answer, **kwargs)  # type: ignore[arg-type]
        made.append(server)
        return server

    yield make
    for server in made:
        server.stop()


def ok(body: bytes, *extra: bytes) -> bytes:
    return b"\r\n".join([b"HTTP/1.1 200 OK", b"Content-Type: application/json",
                         b"Content-Length: %d" % len(body), *extra, b"", body])  # fmt: skip


def chunked(body: bytes, size: int, *extra: bytes) -> bytes:
    chunks = b"".join(b"%x;ext=1\r\n%s\r\n" % (len(body[i : i + size]), body[i : i + size])
                      for i in range(0, len(body), size))  # fmt: skip
    head = b"\r\n".join([b"HTTP/1.1 200 OK", b"Transfer-Encoding: chunked", *extra, b"", b""])
    return head + chunks + b"0\r\nX-Trailer: t\r\n\r\n"


def origin(server: Scripted, timeout_tls: ssl.SSLContext | None = None) -> Origin:
    return Origin("127.0.0.1", server.port, timeout_tls)


def get(o: Origin, path: str = "/x", method: str = "GET", timeout: float = 5.0) -> bytes:
    reply = o.request(method, path, {"Accept": "application/json"},
                      b"{}" if method == "PATCH" else None, timeout)  # fmt: skip
    assert reply.status == 200, reply
    return reply.data


def test_lengths_and_chunks_come_back_whole_over_one_kept_connection(scripted: Make) -> None:
    body = json.dumps({"items": ["n" * 50] * 200}).encode()
    answers = [ok(body), chunked(body, 777), ok(b""), chunked(b"", 1), ok(body)]
    server = scripted(lambda i, _r: answers[i], pieces=7)
    o = origin(server)
    assert [get(o) for _ in answers] == [body, body, b"", b"", body]
    assert {n for n, _ in server.seen} == {0}, "one connection carried every request"


def test_interim_answers_are_skipped_and_a_head_has_no_body(scripted: Make) -> None:
    answers = [b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: x\r\n\r\n"
               + ok(b'{"a": 1}'), b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n",
               b"HTTP/1.1 204 No Content\r\n\r\n", ok(b"{}")]  # fmt: skip
    server = scripted(lambda i, _r: answers[i])
    o = origin(server)
    assert get(o) == b'{"a": 1}'
    assert get(o, method="HEAD") == b""  # its Content-Length is the GET's, no body follows
    assert o.request("DELETE", "/x", {}, None, 5).status == 204
    assert get(o) == b"{}" and {n for n, _ in server.seen} == {0}


def test_a_close_ends_the_connection_and_a_body_may_run_to_it(scripted: Make) -> None:
    answers = [ok(b"{}", b"Connection: close"), b"HTTP/1.0 200 OK\r\n\r\nuntil the end",
               ok(b"{}")]  # fmt: skip

    def answer(i: int, _r: bytes) -> bytes:
        return answers[i]

    server = scripted(answer)
    o = origin(server)
    assert get(o) == b"{}"
    assert o.request("GET", "/x", {}, None, 5).data == b"until the end"  # then it closed
    assert get(o) == b"{}"
    assert [n for n, _ in server.seen] == [0, 1, 2], "a new connection after each close"


def test_a_kept_connection_the_server_closed_is_not_used(scripted: Make) -> None:
    calls: list[int] = []

    def answer(i: int, _r: bytes) -> bytes | None:
        calls.append(i)
        return ok(b"{}", b"Connection: close") if i == 0 else ok(b"{}")

    server = scripted(answer)
    o = origin(server)
    o.keep = 10
    assert get(o, method="PATCH") == b"{}"
    time.sleep(0.05)  # the server's close reached us
    assert get(o, method="PATCH") == b"{}"
    assert [n for n, _ in server.seen] == [0, 1]


def test_a_get_cut_before_its_answer_is_sent_again_a_patch_is_not(scripted: Make) -> None:
    def answer(i: int, request: bytes) -> bytes | None:
        return None if i in (1, 4) else ok(b'{"i": %d}' % i)  # 1, 4: closed unanswered

    server = scripted(answer)
    o = origin(server)
    assert get(o) == b'{"i": 0}'
    assert get(o) == b'{"i": 2}'  # request 1 was cut on the kept connection: sent again
    assert [n for n, _ in server.seen] == [0, 0, 1]
    assert get(o, method="PATCH") == b'{"i": 3}'
    with pytest.raises(ConnectionError, match="closed the connection"):
        get(o, method="PATCH")  # request 4: a PATCH the server may have applied
    assert len(server.seen) == 5


def test_a_silent_server_times_out_once_not_twice(scripted: Make) -> None:
    def answer(i: int, _r: bytes) -> bytes | None:
        if i:
            time.sleep(1)  # then closes, unanswered
        return None if i else ok(b"{}")

    server = scripted(answer)
    o = origin(server)
    assert get(o) == b"{}"
    start = time.monotonic()
    with pytest.raises(TimeoutError):
        get(o, timeout=0.3)
    assert time.monotonic() - start < 1.5 and len(server.seen) == 2


BROKEN = [
    (b"HTTP/1.1 200 OK\r\nX: a\r\n  folded\r\nContent-Length: 0\r\n\r\n", "folded"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nabc", "twice"),
    (
        b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        "both Content-Length and Transfer-Encoding",
    ),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "chunk size"),
    (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n0\r\n\r\n",
        "longer than its size",
    ),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", "Transfer-Encoding gzip"),
    (b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 0\r\n\r\n", "none asked"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "Content-Length '-1'"),
    (b"SSH-2.0-OpenSSH_9.6\r\n\r\n", "not an HTTP/1.1 status line"),
    (b"HTTP/2 200\r\n\r\n", "not an HTTP/1.1 status line"),
    (b"HTTP/1.1 101 Switching Protocols\r\n\r\n", "101"),
    (b"HTTP/1.1 200 OK\r\n: empty\r\n\r\n", "no name"),
    (b"HTTP/1.1 200 OK\r\nX: " + b"a" * (MAX_LINE + 10) + b"\r\n\r\n", "longer than"),
    (b"HTTP/1.1 200 OK\r\n" + b"X: a\r\n" * (MAX_HEADERS + 1) + b"\r\n", "header lines"),
    (b"HTTP/1.1 100 Continue\r\n\r\n" * 20, "interim"),
]


@pytest.mark.parametrize(("raw", "why"), BROKEN, ids=[w for _r, w in BROKEN])
def test_a_broken_response_is_refused_and_its_connection_dropped(
    scripted: Make, raw: bytes, why: str
) -> None:
    server = scripted(lambda i, _r: raw if i == 0 else ok(b"{}"))
    o = origin(server)
    with pytest.raises(BadResponse, match=why):
        get(o)
    assert get(o) == b"{}" and [n for n, _ in server.seen] == [0, 1]


def test_no_request_is_smuggled_through_a_target_or_a_header(scripted: Make) -> None:
    server = scripted(lambda i, _r: ok(b"{}"))
    o = origin(server)
    assert get(o, "/api/v1/nodes/a b\r\nX: y/é") == b"{}"
    assert server.seen[-1][1] == b"GET /api/v1/nodes/a%20b%0D%0AX:%20y/%C3%A9 HTTP/1.1"
    with pytest.raises(ValueError, match="header 'Authorization'"):
        o.request("GET", "/x", {"Authorization": "Bearer t\r\nX-Evil: 1"}, None, 5)
    assert len(server.seen) == 1


def test_an_api_error_and_a_cut_reach_the_caller_as_upstream_words(scripted: Make) -> None:
    status = json.dumps({"kind": "Status", "reason": "Conflict", "message": "the object has "
                         "been modified", "code": 409}).encode()  # fmt: skip
    answers = [b"HTTP/1.1 409 Conflict\r\nContent-Length: %d\r\n\r\n%s" % (len(status), status),
               None]  # fmt: skip
    server = scripted(lambda i, _r: answers[i])
    kube = Kube(Connection(host=f"http://127.0.0.1:{server.port}"))
    with pytest.raises(ApiError) as conflict:
        kube.request("PATCH", "/api/v1/nodes/a", body={})
    assert (conflict.value.status, conflict.value.reason) == (409, "Conflict")
    with pytest.raises(ApiError) as cut:
        kube.request("PATCH", "/api/v1/nodes/a", body={})
    assert cut.value.reason == "Unreachable"
    assert cut.value.message == (f"http://127.0.0.1:{server.port}: PATCH /api/v1/nodes/a: the server "
                                 "closed the connection before its response ended")  # fmt: skip


def test_tls_with_the_servers_name_checked(scripted: Make, tmp_path: Path) -> None:
    ca, context = serving_context(tmp_path)
    server = scripted(lambda i, _r: chunked(b'{"tls": true}', 4), tls=context,
                      close_after=frozenset({1}))  # fmt: skip
    kube = Kube(Connection(host=f"https://127.0.0.1:{server.port}", tls=Tls(ca_file=str(ca))))
    assert kube.request("GET", "/api/v1/nodes/a") == {"tls": True}
    assert kube.request("PATCH", "/api/v1/nodes/b", body={}) == {"tls": True}
    time.sleep(0.2)  # the server closed the kept connection meanwhile
    assert kube.request("PATCH", "/api/v1/nodes/c", body={}) == {"tls": True}
    assert [n for n, _ in server.seen] == [0, 0, 1]
    wrong = Connection(host=f"https://127.0.0.1:{server.port}",
                       tls=Tls(ca_file=str(ca), server_name="api.example"))  # fmt: skip
    with pytest.raises(ApiError, match=r"certificate verify failed|match"):
        Kube(wrong).request("GET", "/x")


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(body=st.binary(max_size=5000), size=st.integers(1, 600), pieces=st.integers(1, 9),
       framing=st.sampled_from(["length", "chunked"]))  # fmt: skip
def test_any_body_in_any_framing_split_anywhere_comes_back_whole(
    scripted: Make, body: bytes, size: int, pieces: int, framing: str
) -> None:
    raw = ok(body) if framing == "length" else chunked(body, size)
    server = scripted(lambda i, _r: raw, pieces=pieces)
    o = origin(server)
    assert get(o) == body and get(o) == body
    assert {n for n, _ in server.seen} == {0}
    server.stop()
