"""A bounded HTTP/1.1 listener for hostile networks: the base of ``mcd server``'s ports and
of the agent's and the controller's metrics listener (upstream: Go's ``net/http`` with
``ReadHeaderTimeout`` and ``IdleTimeout``).

Each connection is an asyncio stream on one event loop, so an open connection costs a socket
and a few KiB, never a thread. It reads one request head (at most :data:`MAX_HEAD` bytes, a
line at most :data:`MAX_LINE`), answers it and closes (``Connection: close``); a request body
is never read (only GET and HEAD are served). The head is parsed here, strictly: a request
line of a method token, a target and ``HTTP/1.0`` or ``HTTP/1.1``, then ``name: value``
lines (names case-insensitive; a folded or malformed line, a control character in a value:
400). (The agent used aiohttp's low-level server for this until issue 46: importing aiohttp
loads its HTTP client too, and with it the system's CA bundle twice, 12 MB of an idle agent's
RSS for a listener that parses one request head.) Around it:

* one accept loop, which counts connections: past ``max_connections`` the oldest one that
  has not yet sent a whole request is closed to admit the new one (the new one is refused
  only when every open connection is being answered), so idle or trickling clients can never
  lock a probe out;
* an overall deadline from accept to a whole request head (TLS handshake included):
  ``deadline`` seconds, however slowly the bytes come; and one to answer and write it:
  ``answer_deadline`` seconds;
* TLS from a context asked for on every connection (a reloaded certificate is used from
  the next connection on);
* a method other than GET or HEAD is answered 405 with an empty body and ``Allow: GET, HEAD``
  before any handler runs; more than ``MAX_HEADERS`` header lines is 431, a head past
  :data:`MAX_HEAD` too;
* the handler is plain blocking code, run in ``workers`` threads (the probe paths in two
  threads of their own, so slow answers never queue a probe).
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import http
import logging
import re
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Self

log = logging.getLogger(__name__)

MAX_HEADERS = 64
MAX_LINE = 64 << 10
MAX_HEAD = 2 * MAX_LINE
"""A request head (request line and header lines) past this is answered 431."""
ALLOWED = ("GET", "HEAD")
LINGER = 1.0
"""Seconds a request's unread body is read and dropped before the close (no reset that
would lose the answer on its way)."""
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_BAD_VALUE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
_VERSION = re.compile(r"HTTP/[0-9]\.[0-9]")


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
        self._tasks: dict[asyncio.Task[None], int] = {}  # each connection's, by its socket
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
        accept = asyncio.create_task(self._accept())
        self._ready.set()
        try:
            await self._stopped.wait()
        finally:
            accept.cancel()
            self.sock.close()
            busy = [
                t for t, fd in self._tasks.items() if fd in self._conns and self._conns[fd].busy
            ]
            if busy:  # requests in flight finish
                await asyncio.wait(busy, timeout=10.0)
            for conn in list(self._conns.values()):
                _shut(conn.sock)
            self._conns.clear()
            for task in list(self._tasks):  # handshakes and heads under way
                task.cancel()
            await asyncio.sleep(0)

    async def _accept(self) -> None:
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
            task = loop.create_task(self._connect(sock, peer))
            self._tasks[task] = sock.fileno()
            task.add_done_callback(lambda done: self._tasks.pop(done, None))

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

    async def _connect(self, sock: socket.socket, peer: tuple[str, int]) -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=MAX_HEAD, loop=loop)
        protocol = asyncio.StreamReaderProtocol(reader, loop=loop)
        try:
            context = self.tls() if self.tls is not None else None
            transport, _ = await loop.connect_accepted_socket(
                lambda: protocol, sock, ssl=context,
                ssl_handshake_timeout=self.deadline if context else None,
            )  # fmt: skip
        except (TimeoutError, OSError, ssl.SSLError) as e:
            log.debug("Connection from %s: %s", peer[0], e)
            sock.close()
            return
        writer = asyncio.StreamWriter(transport, protocol, reader, loop)
        try:
            await self._exchange(reader, writer, sock, peer)
        except (OSError, ssl.SSLError, asyncio.IncompleteReadError) as e:
            log.debug("Connection from %s: %s", peer[0], e)
        finally:
            transport.close()

    async def _exchange(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        sock: socket.socket,
        peer: tuple[str, int],
    ) -> None:
        """Read one request head, answer it (within ``answer_deadline``), linger, close."""
        try:
            request = _parse(await _read_head(reader))
        except (asyncio.IncompleteReadError, ConnectionError):
            return  # closed (by the client, or at the head deadline) before a whole head
        except (asyncio.LimitOverrunError, _TooLong):
            request = 431  # a line, or the head, past its limit
        conn = self._conns.get(sock.fileno())
        if conn is not None:
            conn.busy = True
        version = request.version if isinstance(request, _Request) else "HTTP/1.1"
        try:
            async with asyncio.timeout(self.answer_deadline):
                method, reply = await self._answer(request, peer)
                writer.write(self._head(version, reply) + (b"" if method == "HEAD" else reply.body))
                await writer.drain()
        except TimeoutError:
            log.warning("Closing a connection not answered in %.0f s", self.answer_deadline)
            writer.transport.abort()
            return
        if not isinstance(request, _Request) or request.has_body:
            await _linger(reader)  # what it still sends: dropped, not a reset

    async def _answer(self, request: _Request | int, peer: tuple[str, int]) -> tuple[str, Reply]:
        if isinstance(request, int):  # refused as it was read: Go's net/http's words
            text = f"{request} {http.HTTPStatus(request).phrase}".encode()
            return "GET", Reply(request, text, {"Content-Type": "text/plain; charset=utf-8"})
        if request.method not in ALLOWED:
            return request.method, Reply(405, headers={"Allow": ", ".join(ALLOWED)})
        if len(request.lines) > MAX_HEADERS:
            return request.method, Reply(431)
        address = f"{peer[0]}:{peer[1]}"
        path = request.target.split("?", 1)[0]
        pool = self._probe_workers if path in self.probes else self._workers
        reply = await asyncio.get_running_loop().run_in_executor(
            pool, self.respond, request.method, request.target, request.headers, address
        )
        return request.method, reply

    def _head(self, version: str, reply: Reply) -> bytes:
        try:
            reason = http.HTTPStatus(reply.status).phrase
        except ValueError:
            reason = ""
        fields = {"Server": self.server_name, "Date": email.utils.formatdate(usegmt=True),
                  "Connection": "close"}  # fmt: skip
        fields.update(reply.headers)
        fields["Connection"] = "close"
        if "Content-Length" not in reply.headers:
            fields["Content-Length"] = str(len(reply.body))
        lines = [f"{version} {reply.status} {reason}", *(f"{k}: {v}" for k, v in fields.items())]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


class _Headers(Mapping[str, str]):
    """A request's header fields by name in any case (the first of a repeated name)."""

    def __init__(self, lines: list[tuple[str, str]]) -> None:
        self._fields: dict[str, str] = {}
        for name, value in lines:
            self._fields.setdefault(name.lower(), value)

    def __getitem__(self, name: str) -> str:
        return self._fields[name.lower()]

    def __iter__(self) -> Iterator[str]:
        return iter(self._fields)

    def __len__(self) -> int:
        return len(self._fields)


@dataclass(frozen=True)
class _Request:
    method: str
    target: str
    version: str
    lines: list[tuple[str, str]]
    headers: _Headers

    @property
    def has_body(self) -> bool:
        return "content-length" in self.headers or "transfer-encoding" in self.headers


class _TooLong(Exception):
    """A request head past :data:`MAX_HEAD`."""


async def _read_head(reader: asyncio.StreamReader) -> list[str]:
    """The request line and header lines, up to the empty line (CRLF or a bare LF ends a
    line, as Go's ``net/textproto`` reads them). Raises ``IncompleteReadError`` at EOF."""
    lines: list[str] = []
    size = 0
    while True:
        line = await reader.readuntil(b"\n")
        size += len(line)
        if size > MAX_HEAD:
            raise _TooLong
        text = line.decode("latin-1").removesuffix("\n").removesuffix("\r")
        if not text:
            if lines:
                return lines
            continue  # empty lines before the request line are skipped, as Go does
        lines.append(text)


def _parse(lines: list[str]) -> _Request | int:
    """The request of ``lines``, or the status refusing it (Go's ``readRequest``)."""
    parts = lines[0].split(" ")
    if len(parts) != 3 or not _TOKEN.fullmatch(parts[0]) or not parts[1]:
        return 400
    method, target, version = parts
    if len(lines[0]) > MAX_LINE:
        return 431
    if not _VERSION.fullmatch(version) or _BAD_VALUE.search(target):
        return 400
    if not version.startswith("HTTP/1."):
        return 505
    fields: list[tuple[str, str]] = []
    for line in lines[1:]:
        if len(line) > MAX_LINE:
            return 431
        name, colon, value = line.partition(":")
        value = value.strip(" \t")
        if not colon or not _TOKEN.fullmatch(name) or _BAD_VALUE.search(value):
            return 400  # no colon, a space before it, a folded line, a control character
        fields.append((name, value))
    version = "HTTP/1.0" if version == "HTTP/1.0" else "HTTP/1.1"
    return _Request(method, target, version, fields, _Headers(fields))


async def _linger(reader: asyncio.StreamReader) -> None:
    """Read and drop what the client still sends for up to :data:`LINGER` seconds."""
    with contextlib.suppress(TimeoutError, OSError, ssl.SSLError):
        async with asyncio.timeout(LINGER):
            while await reader.read(1 << 16):
                pass


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
