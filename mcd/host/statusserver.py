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

Bounded as ``mcd server``'s ports are (:mod:`mcd.host.httpserve`): no thread per
connection, 10 s from accept to a whole request head, at most 64 connections open (the
oldest idle one closed to admit a new one), the probes answered in threads of their own;
a method other than GET or HEAD gets 405 with ``Allow: GET, HEAD``.
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Callable, Mapping

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from mcd.host.httpserve import HttpListener, Reply

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


TEXT = "text/plain; charset=utf-8"


def _text(code: int, text: str) -> Reply:
    return Reply(code, f"{text}\n".encode(), {"Content-Type": TEXT})


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
        max_connections: int = 64,
        deadline: float = 10.0,
    ) -> None:
        host, port = parse_listen_address(address)
        self.registry, self.healthz, self.readyz, self.scrapers = (
            registry, healthz, readyz, scrapers,
        )  # fmt: skip
        self.scheme = "http"
        context: ssl.SSLContext | None = None
        if tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.minimum_version = ssl.TLSVersion.TLSv1_2
            context.set_alpn_protocols(["http/1.1"])
            context.load_cert_chain(*tls)
            self.scheme = "https"
        fixed = context
        self._listener = HttpListener(
            self._respond,
            host,
            port,
            tls=(lambda: fixed) if fixed is not None else None,
            workers=2,
            max_connections=max_connections,
            deadline=deadline,
            probes=frozenset({"/healthz", "/readyz"}),
            server_name="mcd",
        )

    def _respond(self, method: str, raw_path: str, headers: Mapping[str, str], _: str) -> Reply:
        path = raw_path.split("?", 1)[0]
        if path == "/metrics":
            refused = self._refused(headers.get("Authorization") or "")
            if refused is not None:
                return _text(*refused)
            return Reply(200, generate_latest(self.registry), {"Content-Type": CONTENT_TYPE_LATEST})
        if path in ("/healthz", "/readyz"):
            problem = (self.healthz if path == "/healthz" else self.readyz)()
            return _text(503, problem) if problem else _text(200, "ok")
        return _text(404, "not found")

    def _refused(self, authorization: str) -> tuple[int, str] | None:
        if self.scrapers is None:
            return None
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return 401, "Unauthorized: /metrics needs a bearer token"
        why = self.scrapers(token.strip())
        return (403, f"Forbidden: {why}") if why else None

    @property
    def port(self) -> int:
        return self._listener.port

    def open_connections(self) -> int:
        return self._listener.open_connections()

    def start(self) -> StatusServer:
        self._listener.start()
        log.info("Serving metrics, /healthz and /readyz on port %d (%s)", self.port, self.scheme)
        return self

    def stop(self) -> None:
        self._listener.stop()
