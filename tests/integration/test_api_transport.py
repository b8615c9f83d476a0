"""Requests to the API server go straight to its connection pool (no proxy): the URL's path
prefix is kept, a redirect is followed as the pool manager follows it, and one connection
carries request after request."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest

from mcd.cluster.api import Kube
from mcd.cluster.wire.transport import Connection


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen: ClassVar[list[tuple[str, str, int]]] = []

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        Handler.seen.append((self.command, self.path, self.client_address[1]))
        if self.path.startswith("/prefix/moved"):
            self.send_response(307)
            self.send_header("Location", "/prefix/api/v1/nodes/there")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        out = json.dumps({"path": self.path, "body": body.decode() or None}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    do_GET = do_PATCH = _answer

    def log_message(self, *_args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    Handler.seen = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/prefix/"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_the_path_prefix_and_query_reach_the_server_over_one_kept_connection(server: str) -> None:
    kube = Kube(Connection(host=server))
    for i in range(5):
        got = kube.request("PATCH", f"/api/v1/nodes/n{i}", {"fieldManager": "a b"},
                           body={"metadata": {"annotations": {"k": str(i)}}})  # fmt: skip
        assert got["path"] == f"/prefix/api/v1/nodes/n{i}?fieldManager=a%20b"
        assert json.loads(got["body"]) == {"metadata": {"annotations": {"k": str(i)}}}
    assert len({port for _m, _p, port in Handler.seen}) == 1, "one kept-alive connection"


def test_a_redirect_is_followed(server: str) -> None:
    kube = Kube(Connection(host=server))
    assert kube.request("GET", "/moved")["path"] == "/prefix/api/v1/nodes/there"
    paths = [p for _m, p, _port in Handler.seen]  # the manager sends it again, then follows
    assert paths[-1] == "/prefix/api/v1/nodes/there" and set(paths[:-1]) == {"/prefix/moved"}
