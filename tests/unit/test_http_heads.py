"""The request head every mcd listener reads itself (issue 46: no aiohttp, whose import
loaded its HTTP client and the system CA bundle twice into every idle agent): strict where a
head is malformed, answered as Go's ``net/http`` answers (upstream's config server), and a
request's unread body never turns the answer into a reset."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry

from mcd.host.statusserver import StatusServer
from tests.unit.test_listener_attacks import raw


@pytest.fixture
def status() -> Iterator[StatusServer]:
    server = StatusServer("127.0.0.1:0", CollectorRegistry(), lambda: "", lambda: "").start()
    try:
        yield server
    finally:
        server.stop()


def _status_line(reply: bytes) -> bytes:
    return reply.split(b"\r\n", 1)[0]


@pytest.mark.parametrize(
    "head",
    [b"hello\r\n\r\n", b"GET /healthz\r\n\r\n", b"GET  /healthz HTTP/1.1\r\n\r\n",
     b"GET /healthz HTTP/1.1\r\nHost x\r\n\r\n", b"GET /healthz HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n",
     b"GET /healthz HTTP/1.1\r\nBad Name: x\r\n\r\n", b"GET /healthz HTTP/1.1\r\nX: a\x00b\r\n\r\n",
     b"GET /healthz HTTP/x.y\r\n\r\n"],
)  # fmt: skip
def test_a_malformed_head_is_400_in_gos_words_and_reaches_no_handler(
    status: StatusServer, head: bytes
) -> None:
    reply = raw(status.port, head)
    assert _status_line(reply) == b"HTTP/1.1 400 Bad Request", reply[:200]
    assert reply.endswith(b"\r\n\r\n400 Bad Request")
    assert b"Server: mcd\r\n" in reply and b"Connection: close\r\n" in reply


def test_another_http_major_version_is_505(status: StatusServer) -> None:
    reply = raw(status.port, b"GET /healthz HTTP/2.0\r\n\r\n")
    assert _status_line(reply) == b"HTTP/1.1 505 HTTP Version Not Supported"


def test_bare_line_feeds_and_http_1_0_are_read_as_go_reads_them(status: StatusServer) -> None:
    assert _status_line(raw(status.port, b"GET /healthz HTTP/1.1\nHost: x\n\n")) == (
        b"HTTP/1.1 200 OK"
    )
    reply = raw(status.port, b"\r\nGET /healthz HTTP/1.0\r\n\r\n")  # a stray CRLF before it
    assert _status_line(reply) == b"HTTP/1.0 200 OK"
    assert reply.endswith(b"\r\n\r\nok\n")


def test_a_head_past_its_limit_is_431_and_the_answer_arrives(status: StatusServer) -> None:
    reply = raw(
        status.port, b"GET /healthz HTTP/1.1\r\n" + b"X: " + b"a" * (200 << 10) + b"\r\n\r\n"
    )
    assert _status_line(reply) == b"HTTP/1.1 431 Request Header Fields Too Large"


def test_a_get_with_a_body_is_answered_whole(status: StatusServer) -> None:
    body = b"x" * (256 << 10)
    with socket.create_connection(("127.0.0.1", status.port), timeout=10) as s:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body))
        s.sendall(body)
        reply = b""
        while chunk := s.recv(65536):
            reply += chunk
    assert _status_line(reply) == b"HTTP/1.1 200 OK" and reply.endswith(b"\r\n\r\nok\n")


def test_the_agent_and_its_listener_do_not_load_aiohttp() -> None:
    code = (
        "import sys\n"
        "import mcd.cli.agent, mcd.host.statusserver, mcd.server.listener\n"
        "print('aiohttp' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
