"""The sockets: HTTP/1.1 over TLS on the secure port, plain on the insecure one (upstream
``APIServer.Serve``, ``getHTTPServerCfg``).

* TLS 1.2 or newer; ALPN offers ``http/1.1`` alone (upstream turns HTTP/2 off,
  CVE-2016-2183); the certificate and key are read again when either file changes
  (upstream's ``certwatcher``), checked before each handshake, so a rotated Secret
  takes effect without a restart; a pair that does not load keeps the previous one.
* Bounded: at most ``workers`` connections are served at once, each in a pool thread that
  does the handshake itself (a client that never finishes it holds one worker, never the
  accept loop); every socket read and write times out after ``timeout`` seconds; one
  request per connection; a request line or header line over 64 KiB is refused by the
  standard library (431/414), and more than ``workers + backlog`` waiting connections are
  closed at once.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import ssl
import threading
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler
from typing import Any

from mcd.server.handler import Handler

log = logging.getLogger(__name__)

MAX_HEADERS = 64


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


def _request_handler(handler: Handler, read_timeout: float) -> type[BaseHTTPRequestHandler]:
    class RequestHandler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "mcd-server"
        sys_version = ""
        timeout = read_timeout

        def _answer(self) -> None:
            self.close_connection = True
            if len(self.headers) > MAX_HEADERS:
                self.send_error(431)
                return
            headers = dict(self.headers.items())
            address = f"{self.client_address[0]}:{self.client_address[1]}"
            response = handler.respond(self.command, self.path, headers, address)
            self.send_response_only(response.status)
            self.send_header("Date", self.date_time_string())
            for name, value in response.headers.items():
                self.send_header(name, value)
            if "Content-Length" not in response.headers:
                self.send_header("Content-Length", "0")
            self.send_header("Connection", "close")
            self.end_headers()
            if response.body:
                self.wfile.write(response.body)

        do_GET = do_HEAD = do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _answer

        def log_message(self, format: str, *args: Any) -> None:
            log.debug("%s " + format, self.address_string(), *args)

    return RequestHandler


class Listener:
    """One listening socket, its accept thread, and a bounded pool of workers."""

    def __init__(
        self,
        handler: Handler,
        address: str,
        port: int,
        tls: CertReloader | None = None,
        workers: int = 16,
        backlog: int = 64,
        timeout: float = 10.0,
    ) -> None:
        self.tls = tls
        self.timeout = timeout
        self.request_handler = _request_handler(handler, timeout)
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((address, port))
        self.sock.listen(backlog)
        self.port: int = self.sock.getsockname()[1]
        self.pool = ThreadPoolExecutor(workers, thread_name_prefix=f"mcs-{self.port}")
        self.slots = threading.BoundedSemaphore(workers + backlog)
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._accept, name=f"accept-{self.port}", daemon=True
        )

    def start(self) -> Listener:
        self._thread.start()
        return self

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, peer = self.sock.accept()
            except OSError:
                if self._stop.is_set():
                    return
                continue
            if not self.slots.acquire(blocking=False):
                log.warning("Too many connections: closing one from %s", peer[0])
                conn.close()
                continue
            try:
                self.pool.submit(self._serve, conn, peer)
            except RuntimeError:  # shut down
                self.slots.release()
                conn.close()
                return

    def _serve(self, conn: socket.socket, peer: Any) -> None:
        try:
            conn.settimeout(self.timeout)
            if self.tls is not None:
                conn = self.tls.context().wrap_socket(conn, server_side=True)
            self.request_handler(conn, peer, self)  # type: ignore[arg-type]
        except (OSError, ssl.SSLError) as e:
            log.debug("Connection from %s: %s", peer[0], e)
        finally:
            try:
                conn.close()
            finally:
                self.slots.release()

    def stop(self) -> None:
        self._stop.set()
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
        self._thread.join(5)
        self.pool.shutdown(wait=True, cancel_futures=True)
