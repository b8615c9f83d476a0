"""The sockets: HTTP/1.1 over TLS on the secure port, plain on the insecure one (upstream
``APIServer.Serve``, ``getHTTPServerCfg``: Go's ``net/http`` with read-header and idle
timeouts).

* TLS 1.2 or newer; ALPN offers ``http/1.1`` alone (upstream turns HTTP/2 off,
  CVE-2016-2183); the certificate and key are read again when either file changes
  (upstream's ``certwatcher``), checked before each handshake, so a rotated Secret
  takes effect without a restart; a pair that does not load keeps the previous one.
* A listen backlog of 1024 (Go's listener takes the kernel's ``somaxconn``): a fleet of
  nodes booting at once is not dropped to SYN retries (64 cost 1 s at 100 clients).
* Bounded (:mod:`mcd.host.httpserve`): at most ``workers`` requests answered at once; at
  most ``max_connections`` open, the oldest one without a whole request closed to admit a
  new one; ``timeout`` seconds from accept to a whole request head (TLS handshake
  included), however slowly it comes; no thread per connection; one request per
  connection; a request line or header line over 64 KiB is refused (400), more than 64
  header lines 431; a method other than GET or HEAD 405 with ``Allow: GET, HEAD``.
"""

from __future__ import annotations

import logging
import os
import ssl
import threading
from collections.abc import Mapping
from typing import Any

from mcd.host.httpserve import HttpListener, Reply
from mcd.server.handler import Handler

log = logging.getLogger(__name__)


class CertReloader:
    """A server SSLContext that follows its certificate and key files."""

    def __init__(self, cert: str, key: str) -> None:
        self.cert, self.key = cert, key
        self._lock = threading.Lock()
        self._stamp: tuple[Any, ...] = ()
        self._context = self._load()

    def _signature(self) -> tuple[Any, ...]:
        out: list[Any] = []
        for path in (self.cert, self.key):
            st = os.stat(path)
            out += [st.st_ino, st.st_mtime_ns, st.st_size]
        return tuple(out)

    def _load(self) -> ssl.SSLContext:
        stamp = self._signature()
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.set_alpn_protocols(["http/1.1"])
        context.load_cert_chain(self.cert, self.key)
        self._stamp = stamp
        return context

    def context(self) -> ssl.SSLContext:
        with self._lock:
            try:
                if self._signature() != self._stamp:
                    self._context = self._load()
                    log.info("Reloaded the serving certificate from %s", self.cert)
            except (OSError, ssl.SSLError) as e:
                log.error("Keeping the previous serving certificate: %s", e)
            return self._context


class Listener(HttpListener):
    """One listening socket of ``mcd server``."""

    def __init__(
        self,
        handler: Handler,
        address: str,
        port: int,
        tls: CertReloader | None = None,
        workers: int = 16,
        backlog: int = 1024,
        timeout: float = 10.0,
        max_connections: int = 256,
    ) -> None:
        def respond(method: str, path: str, headers: Mapping[str, str], address: str) -> Reply:
            r = handler.respond(method, path, headers, address)
            return Reply(r.status, r.body, r.headers)

        super().__init__(
            respond,
            address,
            port,
            tls=tls.context if tls is not None else None,
            workers=workers,
            max_connections=max_connections,
            deadline=timeout,
            probes=frozenset({"/healthz"}),
            server_name="mcd-server",
            backlog=backlog,
        )
        self.certs = tls
