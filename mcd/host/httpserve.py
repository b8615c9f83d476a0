"""A bounded HTTP/1.1 listener for hostile networks: the base of ``mcd server``'s ports and
of the agent's and the controller's metrics listener (upstream: Go's ``net/http`` with
``ReadHeaderTimeout`` and ``IdleTimeout``).

Parsing and writing HTTP is aiohttp's low-level server (``aiohttp.web.Server``, already
installed as a dependency of the kubernetes client): an asyncio protocol, so an open
connection costs a socket and a few KiB, never a thread; its keep-alive timer, armed when a
connection starts, closes one that has not sent a whole request head in time; header names
are case-insensitive; it speaks HTTP/1.x only. Around it, this module keeps what aiohttp
does not:

* one accept loop on the event loop, which counts connections: past ``max_connections``
  the oldest one that has not yet sent a whole request is closed to admit the new one (the
  new one is refused only when every open connection is being answered), so idle or
  trickling clients can never lock a probe out;
* an overall deadline from accept to a whole request head (TLS handshake included):
  ``deadline`` seconds, however slowly the bytes come; and one to answer and write it:
  ``answer_deadline`` seconds;
* TLS from a context asked for on every connection (a reloaded certificate is used from
  the next connection on);
* one request per connection (``Connection: close``); a method other than GET or HEAD is
  answered 405 with an empty body and ``Allow: GET, HEAD`` before any handler runs; more
  than ``MAX_HEADERS`` header lines is 431;
* the handler is plain blocking code, run in ``workers`` threads (the probe paths in two
  threads of their own, so slow answers never queue a probe).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Self

from aiohttp import web
from aiohttp.http_parser import HttpRequestParserPy
from aiohttp.web_protocol import RequestHandler, RequestPayloadError

log = logging.getLogger(__name__)

MAX_HEADERS = 64
MAX_LINE = 64 << 10
ALLOWED = ("GET", "HEAD")


@dataclass(frozen=True)
class Reply:
    status: int
    body: bytes = b""
    headers: Mapping[str, str] = field(default_factory=dict)


Respond = Callable[[str, str, Mapping[str, str], str], Reply]
"""``(method, raw path, headers (case-insensitive), "address:port")`` -> the reply; blocking."""


@dataclass
class _Conn:
    sock: socket.socket
    accepted: float
    busy: bool = False


class HttpListener:
    """One listening socket served by an event loop in a thread of its own."""

    def __init__(
        self,
        respond: Respond,
        address: str,
        port: int,
        *,
        tls: Callable[[], ssl.SSLContext] | None = None,
        workers: int = 16,
        max_connections: int = 256,
        deadline: float = 10.0,
        answer_deadline: float = 60.0,
        probes: frozenset[str] = frozenset(),
        server_name: str = "mcd",
        backlog: int = 128,
    ) -> None:
        self.respond, self.tls, self.probes = respond, tls, probes
        self.max_connections, self.deadline = max_connections, deadline
        self.answer_deadline, self.server_name = answer_deadline, server_name
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.sock.bind((address, port))
            self.sock.listen(backlog)
            self.sock.setblocking(False)
        except BaseException:
            self.sock.close()
            raise
        self.port: int = self.sock.getsockname()[1]
        self._workers = ThreadPoolExecutor(workers, thread_name_prefix=f"http-{self.port}")
        self._probe_workers = ThreadPoolExecutor(2, thread_name_prefix=f"probe-{self.port}")
        self._conns: dict[int, _Conn] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._stopped: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, name=f"http-{self.port}", daemon=True)

    # -- lifecycle (any thread) --

    def start(self) -> Self:
        self._thread.start()
        self._ready.wait(30)
        return self

    def stop(self) -> None:
        if self._thread.is_alive() and self._stopped is not None:
            self._loop.call_soon_threadsafe(self._stopped.set)
            self._thread.join(15)
        else:
            self.sock.close()
            if not self._thread.is_alive() and not self._loop.is_closed():
                self._loop.close()
        self._workers.shutdown(wait=False, cancel_futures=True)
        self._probe_workers.shutdown(wait=False, cancel_futures=True)

    def open_connections(self) -> int:
        return sum(1 for c in list(self._conns.values()) if c.sock.fileno() != -1)

    # -- the event loop --

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._serve())
        finally:
            self._loop.close()

    async def _serve(self) -> None:
        self._stopped = asyncio.Event()
        server = _Server(
            self._handle,
            keepalive_timeout=self.deadline,
            max_line_size=MAX_LINE,
            max_field_size=MAX_LINE,
            max_headers=MAX_HEADERS * 2,
            lingering_time=1.0,
            access_log=None,
        )
        accept = asyncio.create_task(self._accept(server))
        self._ready.set()
        try:
            await self._stopped.wait()
        finally:
            accept.cancel()
            self.sock.close()
            with contextlib.suppress(Exception):
                await server.shutdown(10.0)  # requests in flight finish
            for conn in list(self._conns.values()):
                _shut(conn.sock)
            self._conns.clear()
            for task in list(self._tasks):  # handshakes under way
                task.cancel()
            await asyncio.sleep(0)

    async def _accept(self, server: web.Server) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                sock, peer = await loop.sock_accept(self.sock)
            except OSError as e:
                log.debug("accept on port %d: %s", self.port, e)
                await asyncio.sleep(0.1)  # out of descriptors: let the deadlines free some
                continue
            await asyncio.sleep(0)  # a flood of connections must not starve those accepted
            if not self._admit(sock, peer):
                continue
            task = loop.create_task(self._connect(server, sock, peer))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def _admit(self, sock: socket.socket, peer: tuple[str, int]) -> bool:
        for fd, conn in list(self._conns.items()):
            if conn.sock.fileno() == -1:
                del self._conns[fd]
        if len(self._conns) >= self.max_connections:
            idle = [c for c in self._conns.values() if not c.busy]
            if not idle:
                log.warning("Too many connections: closing one from %s", peer[0])
                sock.close()
                return False
            oldest = min(idle, key=lambda c: c.accepted)
            log.debug("Too many connections: closing the oldest idle one")
            del self._conns[oldest.sock.fileno()]
            _shut(oldest.sock)
        conn = _Conn(sock, time.monotonic())
        self._conns[sock.fileno()] = conn
        asyncio.get_running_loop().call_later(self.deadline, self._expire, conn)
        return True

    def _expire(self, conn: _Conn) -> None:
        """The head deadline: a connection with no whole request by now is closed."""
        if not conn.busy:
            _shut(conn.sock)

    async def _connect(
        self, server: web.Server, sock: socket.socket, peer: tuple[str, int]
    ) -> None:
        loop = asyncio.get_running_loop()
        try:
            context = self.tls() if self.tls is not None else None
            await loop.connect_accepted_socket(
                server, sock, ssl=context, ssl_handshake_timeout=self.deadline if context else None
            )
        except (TimeoutError, OSError, ssl.SSLError) as e:
            log.debug("Connection from %s: %s", peer[0], e)
            sock.close()

    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        raw = request.transport.get_extra_info("socket") if request.transport else None
        conn = self._conns.get(raw.fileno()) if raw is not None else None
        if conn is not None:
            conn.busy = True
        try:
            async with asyncio.timeout(self.answer_deadline):
                return await self._answer(request)
        except TimeoutError:
            log.warning("Closing a connection not answered in %.0f s", self.answer_deadline)
            if request.transport is not None:
                request.transport.abort()
            raise

    async def _answer(self, request: web.BaseRequest) -> web.StreamResponse:
        if request.method not in ALLOWED:
            reply = Reply(405, headers={"Allow": ", ".join(ALLOWED)})
        elif len(request.raw_headers) > MAX_HEADERS:
            reply = Reply(431)
        else:
            peer = request.transport.get_extra_info("peername") if request.transport else None
            address = f"{peer[0]}:{peer[1]}" if peer else "unknown"
            path = request.raw_path.split("?", 1)[0]
            pool = self._probe_workers if path in self.probes else self._workers
            reply = await asyncio.get_running_loop().run_in_executor(
                pool, self.respond, request.method, request.raw_path, request.headers, address
            )
        response = web.StreamResponse(status=reply.status)
        response.force_close()
        response.headers["Server"] = self.server_name
        response.headers["Connection"] = "close"
        for name, value in reply.headers.items():
            response.headers[name] = value
        if "Content-Length" not in reply.headers:
            response.content_length = len(reply.body)
        await response.prepare(request)
        if request.method != "HEAD" and reply.body:
            await response.write(reply.body)
        await response.write_eof()
        return response


class _Server(web.Server):
    """aiohttp's server with its pure-Python request parser, which reads any method token
    (as Go's ``net/http`` does: the handler then answers 405); the C one (llhttp) refuses
    methods it does not know with a 400 and a text body."""

    def __call__(self) -> RequestHandler:
        handler = super().__call__()
        if getattr(handler, "_parser", None) is not None:
            handler._parser = HttpRequestParserPy(
                handler,
                self._loop,
                2**16,
                max_line_size=MAX_LINE,
                max_field_size=MAX_LINE,
                max_headers=MAX_HEADERS * 2,
                payload_exception=RequestPayloadError,
                max_msg_queue_size=8,
            )
        return handler


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
