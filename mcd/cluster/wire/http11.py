"""One request, one whole response: HTTP/1.1 on kept-alive connections to one server.

A plain request to the API server (a GET, a PATCH: not a watch, which streams through
urllib3) is written in one ``sendall`` and its response read into one buffer. Measured
on the real kube-apiserver, one thread PATCHing a Node (the controller's write): 0.2 ms of
CPU a request here, 0.6 ms through urllib3 (its pool, timeouts, ``http.client`` and the
``email`` header parser), 0.4 ms through ``http.client`` alone, 0.65 ms through h11 and
0.33 ms through pycurl (docs/scale.md). At 10,000 nodes that was a third of the
controller's CPU.

The server is not trusted more than the wire: the status line, each header line, the
number of header lines, a chunk's size line and the whole body are bounded, a response
that breaks the framing (two lengths that disagree, a length and ``chunked``, a folded
line, a chunk not followed by its CRLF) raises :class:`BadResponse` and its connection is
dropped. A connection is kept for the next request only when the response said so
(HTTP/1.1 without ``Connection: close``) and was read to its exact end. An idle
connection the server has closed (or sent anything on) is seen before it is used; a
request whose connection was cut before it was sent in full, or a GET or HEAD cut (not
timed out) before any byte of its answer, is sent once more on a new connection (as Go's
client does).
"""

from __future__ import annotations

import contextlib
import re
import select
import socket
import ssl
import urllib.parse
from collections import deque
from dataclasses import dataclass

MAX_LINE = 64 * 1024
"""Bytes of the status line, a header line or a chunk's size line."""
MAX_HEADERS = 256
MAX_BODY = 1 << 30
"""A response body larger than this is refused (a list of 25,000 real Nodes is ~300 MB)."""
RECEIVE = 65536
NO_BODY = frozenset({204, 304})
REPLAYABLE = frozenset({"GET", "HEAD"})
INTERIM = 8
"""Interim (1xx) responses taken before the final one."""
_CONTROL = re.compile(r"[\x00-\x20\x7f]")
_BREAK = re.compile(r"[\r\n\x00]")
_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")


class BadResponse(ValueError):
    """The server's bytes are not an HTTP/1.1 response (or not one mcd takes)."""

    def __str__(self) -> str:
        return f"a broken HTTP response: {self.args[0] if self.args else ''}"


class Closed(ConnectionError):
    """The server closed the connection before the response ended."""


@dataclass
class Reply:
    """A whole response: header names lower-cased (a repeated one: its last value)."""

    status: int
    reason: str
    headers: dict[str, str]
    data: bytes


class _Link:
    """One connection and the bytes received on it not yet taken."""

    __slots__ = ("_at", "_data", "_timeout", "got", "sock")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.got = 0
        """Bytes received on it so far."""
        self._data = b""
        self._at = 0
        self._timeout: float | None = None

    def timeout(self, seconds: float) -> None:
        if seconds != self._timeout:  # a syscall each time it is set
            self.sock.settimeout(seconds)
            self._timeout = seconds

    def idle(self) -> bool:
        """Nothing left unread, and nothing arrived since (the server closing it, or bytes
        no request asked for)."""
        if self._at != len(self._data):
            return False
        if isinstance(self.sock, ssl.SSLSocket) and self.sock.pending():
            return False
        poll = select.poll()
        poll.register(self.sock, select.POLLIN)
        if not poll.poll(0):
            return True
        if not isinstance(self.sock, ssl.SSLSocket):
            return False
        self.timeout(0.0)  # a TLS record that carries no data (a session ticket) is no answer
        try:
            self.sock.recv(1)
        except ssl.SSLWantReadError:
            return True
        except OSError:
            return False
        return False  # bytes no request asked for, or the end of the connection

    def _fill(self) -> None:
        chunk = self.sock.recv(RECEIVE)
        if not chunk:
            raise Closed("the server closed the connection before its response ended")
        self.got += len(chunk)
        self._data = self._data[self._at :] + chunk if self._at else self._data + chunk
        self._at = 0

    def line(self) -> bytes:
        """The next line, its CRLF (or LF) stripped."""
        while (end := self._data.find(b"\n", self._at)) < 0:
            if len(self._data) - self._at > MAX_LINE:
                raise BadResponse(f"a line longer than {MAX_LINE} bytes")
            self._fill()
        if end - self._at > MAX_LINE:
            raise BadResponse(f"a line longer than {MAX_LINE} bytes")
        line, self._at = self._data[self._at : end], end + 1
        return line[:-1] if line.endswith(b"\r") else line

    def take(self, n: int) -> bytes:
        """Exactly ``n`` bytes."""
        have = len(self._data) - self._at
        if have >= n:
            out, self._at = self._data[self._at : self._at + n], self._at + n
            return out
        buf = bytearray(n)
        view = memoryview(buf)
        view[:have] = self._data[self._at :]
        self._data, self._at = b"", 0
        while have < n:
            got = self.sock.recv_into(view[have:], n - have)
            if not got:
                raise Closed("the server closed the connection before its response ended")
            self.got += got
            have += got
        return bytes(buf)

    def rest(self) -> bytes:
        """Everything until the server closes the connection."""
        parts = [self._data[self._at :]]
        self._data, self._at = b"", 0
        size = len(parts[0])
        while chunk := self.sock.recv(RECEIVE):
            self.got += len(chunk)
            size += len(chunk)
            if size > MAX_BODY:
                raise BadResponse(f"a body larger than {MAX_BODY} bytes")
            parts.append(chunk)
        return b"".join(parts)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


class Origin:
    """Kept-alive connections to one ``scheme://host:port`` (safe to share among threads:
    a request takes an idle connection or opens one, and gives it back when it may be used
    again, up to ``keep`` of them)."""

    def __init__(
        self, host: str, port: int, tls: ssl.SSLContext | None = None,
        server_hostname: str | None = None, keep: int = 10,
    ) -> None:  # fmt: skip
        self.host, self.port, self.tls, self.keep = host, port, tls, keep
        self.server_hostname = server_hostname or host
        default = 443 if tls is not None else 80
        name = f"[{host}]" if ":" in host else host
        self._host_header = name if port == default else f"{name}:{port}"
        self._idle: deque[_Link] = deque()

    def request(
        self, method: str, target: str, headers: dict[str, str], body: bytes | None,
        timeout: float,
    ) -> Reply:  # fmt: skip
        """Send one request (``target``: the path and query) and read its whole response;
        network errors are ``OSError``, a broken response :class:`BadResponse`."""
        head = _head(method, target, self._host_header, headers, body)
        message = head + body if body else head
        while True:
            link, reused = self._link(timeout)
            start = link.got
            try:
                try:
                    link.sock.sendall(message)
                except OSError:
                    if reused:  # cut before the server had it all: nothing was done
                        link.close()
                        continue
                    raise
                reply, again = self._read(link, method)
            except (TimeoutError, BadResponse):
                link.close()
                raise
            except OSError:
                link.close()
                if reused and link.got == start and method in REPLAYABLE:
                    continue  # the server closed a kept connection as the request went
                raise
            except BaseException:
                link.close()
                raise
            if again and len(self._idle) < self.keep:
                self._idle.append(link)
            else:
                link.close()
            return reply

    def close(self) -> None:
        while self._idle:
            self._idle.pop().close()

    def _link(self, timeout: float) -> tuple[_Link, bool]:
        while True:
            try:
                link = self._idle.pop()
            except IndexError:
                break
            if link.idle():
                link.timeout(timeout)
                return link, True
            link.close()
        sock = socket.create_connection((self.host, self.port), timeout=timeout)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.tls is not None:
                sock = self.tls.wrap_socket(sock, server_hostname=self.server_hostname)
        except BaseException:
            sock.close()
            raise
        link = _Link(sock)
        link.timeout(timeout)
        return link, False

    def _read(self, link: _Link, method: str) -> tuple[Reply, bool]:
        """The response and whether its connection may carry another request."""
        for _ in range(INTERIM + 1):
            status, reason, version, headers = _read_head(link)
            if status == 101:
                raise BadResponse("101 Switching Protocols to a request that asked for none")
            if status >= 200:
                break  # 100 Continue, 103 Early Hints...: the response is still to come
        else:
            raise BadResponse(f"more than {INTERIM} interim responses")
        keep = version == b"HTTP/1.1" and "close" not in headers.get("connection", "").lower()
        encoding = headers.get("transfer-encoding")
        length = headers.get("content-length")
        if headers.get("content-encoding", "identity").lower() != "identity":
            raise BadResponse(f"Content-Encoding {headers['content-encoding']} (none asked)")
        if method == "HEAD" or status in NO_BODY:
            data = b""
        elif encoding is not None:
            if encoding.strip().lower() != "chunked":
                raise BadResponse(f"Transfer-Encoding {encoding}")
            if length is not None:
                raise BadResponse("both Content-Length and Transfer-Encoding")
            data = _chunked(link)
        elif length is not None:
            data = link.take(_length(length))
        else:
            data, keep = link.rest(), False
        return Reply(status, reason, headers, data), keep


def _head(
    method: str, target: str, host: str, headers: dict[str, str], body: bytes | None
) -> bytes:
    """The request's head: a space, control or non-ASCII character in the target is
    percent-encoded, a header with a line break is refused (no request smuggled into
    another)."""
    if not target.isascii() or _CONTROL.search(target):  # percent-encoded, as urllib3 does
        target = urllib.parse.quote(target, safe="!#$%&'()*+,/:;=?@[]~")
    lines = [f"{method} {target} HTTP/1.1", f"Host: {host}"]
    for name, value in headers.items():
        if not _NAME.fullmatch(name) or _BREAK.search(value):
            raise ValueError(f"{method} {target}: header {name!r} has a control character")
        lines.append(f"{name}: {value}")
    if body is not None or method in ("POST", "PUT", "PATCH"):
        lines.append(f"Content-Length: {len(body or b'')}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _read_head(link: _Link) -> tuple[int, str, bytes, dict[str, str]]:
    line = link.line()
    version, _, rest = line.partition(b" ")
    code, _, reason = rest.partition(b" ")
    if version not in (b"HTTP/1.1", b"HTTP/1.0") or len(code) != 3 or not code.isdigit():
        raise BadResponse(f"not an HTTP/1.1 status line: {line[:80]!r}")
    headers: dict[str, str] = {}
    lengths: set[str] = set()
    for _ in range(MAX_HEADERS + 1):
        line = link.line()
        if not line:
            if len(lengths) > 1:
                raise BadResponse(f"Content-Length given twice: {sorted(lengths)}")
            return int(code), reason.decode("latin-1"), version, headers
        if line[:1] in (b" ", b"\t"):
            raise BadResponse("a folded header line")
        name, colon, value = line.partition(b":")
        if not colon or not name or name != name.strip():
            raise BadResponse(f"a header line with no name: {line[:80]!r}")
        key, text = name.decode("latin-1").lower(), value.strip().decode("latin-1")
        if key == "content-length":
            lengths.add(text)
        headers[key] = text
    raise BadResponse(f"more than {MAX_HEADERS} header lines")


def _length(text: str) -> int:
    if not text.isdigit() or not text.isascii():
        raise BadResponse(f"Content-Length {text[:40]!r}")
    n = int(text)
    if n > MAX_BODY:
        raise BadResponse(f"a body larger than {MAX_BODY} bytes")
    return n


def _chunked(link: _Link) -> bytes:
    parts: list[bytes] = []
    size = 0
    while True:
        line = link.line()
        hexa = line.partition(b";")[0].strip()
        if not hexa or len(hexa) > 16 or any(c not in b"0123456789abcdefABCDEF" for c in hexa):
            raise BadResponse(f"a chunk size line {line[:40]!r}")
        n = int(hexa, 16)
        if n == 0:
            for _ in range(MAX_HEADERS + 1):  # trailers, then the empty line
                if not link.line():
                    return b"".join(parts)
            raise BadResponse(f"more than {MAX_HEADERS} trailer lines")
        size += n
        if size > MAX_BODY:
            raise BadResponse(f"a body larger than {MAX_BODY} bytes")
        parts.append(link.take(n))
        if link.line():
            raise BadResponse("a chunk longer than its size")
