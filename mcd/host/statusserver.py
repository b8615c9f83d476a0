"""The HTTP listener of the agent and of the controller on ``--metrics-url``: ``/metrics``,
``/healthz`` and ``/readyz``.

``/metrics`` is the Prometheus text format (upstream serves only this). Beyond upstream,
``/healthz`` and ``/readyz`` answer 200 ``ok`` when their probe finds nothing wrong, else 503
with the cause the probe gives (the agent: a sync worker alive and not stuck; boot checks
done and the Node watch connected).

Given a scraper check, ``/metrics`` asks for ``Authorization: Bearer <token>`` (401 without
one, 403 when the check refuses it, its reason in the body) as upstream's kube-rbac-proxy
does; the probes stay open (a kubelet's probe carries no token, and they tell nothing but
``ok`` or a cause). Given a certificate and key, the listener speaks TLS.
"""

from __future__ import annotations

import logging
import ssl
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

log = logging.getLogger(__name__)

Probe = Callable[[], str]
"""Returns '' when healthy, else the reason it is not."""

ScraperCheck = Callable[[str], str]
"""Given a scraper's bearer token: '' when it may read ``/metrics``, else why not."""


def parse_listen_address(url: str) -> tuple[str, int]:
    """``127.0.0.1:8797`` or ``http://127.0.0.1:8797`` -> (host, port)."""
    rest = url.split("://", 1)[-1].rstrip("/")
    host, sep, port = rest.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"invalid metrics address {url!r}: expected host:port")
    return host.strip("[]") or "0.0.0.0", int(port)


class StatusServer:
    def __init__(
        self,
        address: str,
        registry: CollectorRegistry,
        healthz: Probe,
        readyz: Probe,
        *,
        scrapers: ScraperCheck | None = None,
        tls: tuple[str, str] | None = None,
    ) -> None:
        host, port = parse_listen_address(address)
        registry_, healthz_, readyz_, scrapers_ = registry, healthz, readyz, scrapers

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if path == "/metrics":
                    refused = self._refused()
                    if refused is not None:
                        code, why = refused
                        self._send(code, f"{why}\n".encode(), "text/plain; charset=utf-8")
                        return
                    self._send(200, generate_latest(registry_), CONTENT_TYPE_LATEST)
                elif path in ("/healthz", "/readyz"):
                    problem = (healthz_ if path == "/healthz" else readyz_)()
                    code, text = (503, problem) if problem else (200, "ok")
                    self._send(code, f"{text}\n".encode(), "text/plain; charset=utf-8")
                else:
                    self._send(404, b"not found\n", "text/plain; charset=utf-8")

            def _refused(self) -> tuple[int, str] | None:
                if scrapers_ is None:
                    return None
                scheme, _, token = (self.headers.get("Authorization") or "").partition(" ")
                if scheme.lower() != "bearer" or not token.strip():
                    return 401, "Unauthorized: /metrics needs a bearer token"
                why = scrapers_(token.strip())
                return (403, f"Forbidden: {why}") if why else None

            def _send(self, code: int, body: bytes, content_type: str) -> None:
                self.send_response(code)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                log.debug("metrics listener: " + format, *args)

        self._server = ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        self.scheme = "http"
        if tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.minimum_version = ssl.TLSVersion.TLSv1_2
            context.load_cert_chain(*tls)
            # the handshake in each connection's own thread, not in accept(): a client that
            # connects and says nothing holds one thread, never the listener
            self._server.socket = context.wrap_socket(
                self._server.socket, server_side=True, do_handshake_on_connect=False
            )
            self.scheme = "https"
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="metrics", daemon=True
        )

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> StatusServer:
        self._thread.start()
        log.info("Serving metrics, /healthz and /readyz on port %d (%s)", self.port, self.scheme)
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
