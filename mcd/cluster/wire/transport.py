"""One HTTPS connection pool to the API server and the credentials it presents.

The agent talks to the API server through urllib3 directly: no ``ApiClient``, no
models, no pydantic, no requests/oauthlib (the official client's configuration loader
pulls those in: ~12 MB of an idle ``mcd start``). The pool is built once from a
:class:`Connection`, which :mod:`mcd.cluster.wire.kubeconfig` fills from the in-cluster service
account or a kubeconfig file (or, for exec and auth-provider plugins, from the official
client's full loader). A bearer token read from a file is read again when the file changes
(a projected service account token is rotated by the kubelet) and at least every minute,
as client-go and the official client do.
"""

from __future__ import annotations

import base64
import os
import ssl
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import urllib3

from mcd.cluster.wire.http11 import Origin, Reply

USER_AGENT = "machine-config-daemon"
TOKEN_REFRESH_SECONDS = 60.0
POOL_SIZE = (os.cpu_count() or 1) * 5
"""The official client's ``connection_pool_maxsize``: watches and requests share the pool."""


class TokenFile:
    """``Bearer <token>`` from a file, read again when it changes or a minute has passed."""

    def __init__(self, path: str, period: float = TOKEN_REFRESH_SECONDS) -> None:
        self.path = path
        self.period = period
        self._lock = threading.Lock()
        self._stamp: tuple[int, int] | None = None
        self._read_at = 0.0
        self._value = ""
        self.read()

    def read(self) -> str:
        """The header value; raises ``ValueError`` for an empty file, ``OSError`` for none."""
        with self._lock:
            st = os.stat(self.path)
            stamp = (st.st_mtime_ns, st.st_size)
            now = time.monotonic()
            if stamp != self._stamp or now - self._read_at >= self.period:
                with open(self.path, encoding="utf-8") as f:
                    token = f.read().strip()
                if not token:
                    raise ValueError(f"token file {self.path} is empty")
                self._value, self._stamp, self._read_at = f"Bearer {token}", stamp, now
            return self._value

    def __call__(self) -> str | None:
        try:
            return self.read()
        except (OSError, ValueError):
            return self._value or None  # keep the last token while the file is replaced


def static_header(value: str | None) -> Callable[[], str | None]:
    return lambda: value


def basic_auth(username: str, password: str) -> str:
    pair = f"{username}:{password}".encode()
    return "Basic " + base64.b64encode(pair).decode("ascii")


@dataclass
class Tls:
    """What the TLS handshake needs; ``*_data`` are PEM bytes (kubeconfig ``-data`` fields)."""

    verify: bool = True
    ca_file: str | None = None
    ca_data: bytes | None = None
    cert_file: str | None = None
    key_file: str | None = None
    cert_data: bytes | None = None
    key_data: bytes | None = None
    server_name: str | None = None


@dataclass
class Connection:
    """The API server's address, TLS and credentials, and the pool built from them."""

    host: str
    tls: Tls = field(default_factory=Tls)
    authorization: Callable[[], str | None] = field(default=static_header(None))
    proxy: str | None = None
    user_agent: str = USER_AGENT
    pool_size: int = POOL_SIZE
    """Connections kept open (set before the first request)."""
    _pool: urllib3.PoolManager | None = field(default=None, repr=False)
    _direct: tuple[urllib3.HTTPConnectionPool, str] | None = field(default=None, repr=False)
    _origin: tuple[Origin, str] | None = field(default=None, repr=False)

    @property
    def pool(self) -> urllib3.PoolManager:
        if self._pool is None:
            self._pool = self._make_pool()
        return self._pool

    def _server(self) -> tuple[urllib3.HTTPConnectionPool, str] | None:
        """The API server's own connection pool and the path its URL starts with, when
        there is no proxy: a request goes to it without the manager's URL parse and pool
        lookup (a third of a Node write's Python time at 10,000 nodes)."""
        if self._direct is None and not self.proxy:
            url = urllib.parse.urlsplit(self.host)
            self._direct = (self.pool.connection_from_url(self.host), url.path.rstrip("/"))
        return self._direct

    def _make_pool(self) -> urllib3.PoolManager:
        args: dict[str, Any] = {"maxsize": self.pool_size}
        if self.host.startswith("https:"):
            args["ssl_context"] = self._ssl_context()
            if not self.tls.verify:
                args["cert_reqs"] = ssl.CERT_NONE
                args["assert_hostname"] = False
            if self.tls.server_name:
                args["server_hostname"] = self.tls.server_name
        if self.proxy:
            return urllib3.ProxyManager(self.proxy, **args)
        return urllib3.PoolManager(**args)

    def _ssl_context(self) -> ssl.SSLContext:
        tls = self.tls
        context = urllib3.util.ssl_.create_urllib3_context(
            cert_reqs=ssl.CERT_REQUIRED if tls.verify else ssl.CERT_NONE
        )
        if not tls.verify:
            context.check_hostname = False
        elif tls.ca_file or tls.ca_data:
            context.load_verify_locations(
                cafile=tls.ca_file, cadata=tls.ca_data.decode("ascii") if tls.ca_data else None
            )
        else:
            context.load_default_certs()
        if tls.cert_file or tls.cert_data:
            _load_cert_chain(context, tls)
        return context

    def _plain(self) -> tuple[Origin, str] | None:
        """The API server's kept-alive connections (:mod:`mcd.cluster.wire.http11`) and the
        path its URL starts with, when there is no proxy."""
        if self._origin is None and not self.proxy:
            url = urllib.parse.urlsplit(self.host)
            https = url.scheme == "https"
            origin = Origin(
                url.hostname or "", url.port or (443 if https else 80),
                self._ssl_context() if https else None, self.tls.server_name, self.pool_size,
            )  # fmt: skip
            self._origin = (origin, url.path.rstrip("/"))
        return self._origin

    def send(
        self,
        method: str,
        path: str,
        query: Sequence[tuple[str, str]],
        headers: Mapping[str, str],
        body: bytes | None,
        timeout: float,
    ) -> Reply:
        """One request and its whole response (a stream: :meth:`open`), on a kept-alive
        connection; through the pool manager with a proxy or when the server redirects
        (sent again through it, which follows the redirect)."""
        path, sent = self._prepared(path, query, headers)
        plain = self._plain()
        if plain is not None:
            origin, prefix = plain
            reply = origin.request(method, prefix + path, sent, body, timeout)
            if not (300 <= reply.status < 400 and reply.headers.get("location")):
                return reply
        response = self.pool.request(
            method, self.host.rstrip("/") + path, body=body, headers=sent,
            timeout=urllib3.Timeout(timeout),
        )  # fmt: skip
        headers_ = {k.lower(): v for k, v in response.headers.items()}
        return Reply(response.status, response.reason or "", headers_, response.data)

    def _prepared(
        self, path: str, query: Sequence[tuple[str, str]], headers: Mapping[str, str]
    ) -> tuple[str, dict[str, str]]:
        """The path with its query string, and the headers with mcd's User-Agent and the
        credentials of the moment."""
        if query:
            path += "?" + urllib.parse.urlencode(query, quote_via=urllib.parse.quote)
        sent = {**headers, "User-Agent": self.user_agent}
        auth = self.authorization()
        if auth:
            sent["Authorization"] = auth
        return path, sent

    def open(
        self,
        method: str,
        path: str,
        query: Sequence[tuple[str, str]],
        headers: Mapping[str, str],
        body: bytes | None,
        timeout: urllib3.Timeout,
    ) -> urllib3.BaseHTTPResponse:
        """The response with its body unread (``release_conn`` it). A redirect is followed
        as the pool manager follows it (the request is sent again through it)."""
        path, sent = self._prepared(path, query, headers)
        server = self._server()
        if server is not None:
            pool, prefix = server
            response = pool.urlopen(
                method, prefix + path, body=body, headers=sent, timeout=timeout,
                preload_content=False, redirect=False, assert_same_host=False,
            )  # fmt: skip
            if not response.get_redirect_location():
                return response
            response.drain_conn()
        return self.pool.request(
            method, self.host.rstrip("/") + path, body=body, headers=sent, timeout=timeout,
            preload_content=False,
        )  # fmt: skip

    def close(self) -> None:
        if self._pool is not None:
            self._pool.clear()
        if self._origin is not None:
            self._origin[0].close()
        self._direct = self._origin = None


def _load_cert_chain(context: ssl.SSLContext, tls: Tls) -> None:
    """The client certificate; ``-data`` fields go through a private file that is removed
    at once (``ssl`` loads a chain from files only)."""
    if tls.cert_data is None and tls.key_data is None:
        context.load_cert_chain(str(tls.cert_file), tls.key_file)
        return
    with tempfile.TemporaryDirectory(prefix="mcd-tls-") as tmp:
        cert, key = tls.cert_file, tls.key_file
        if tls.cert_data is not None:
            cert = os.path.join(tmp, "cert.pem")
            _write_private(cert, tls.cert_data)
        if tls.key_data is not None:
            key = os.path.join(tmp, "key.pem")
            _write_private(key, tls.key_data)
        context.load_cert_chain(str(cert), key)


def _write_private(path: str, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
