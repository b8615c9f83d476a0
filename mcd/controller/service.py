"""The controller's metrics and its HTTP listener (``/metrics``, ``/healthz``, ``/readyz``).

Metric names follow upstream's machine-config-controller where it has one
(``mcc_pool_alert``, ``mcc_os_image_url_override``); the rest are mcd's own
(``mcd_controller_*``). The listener answers like the agent's: 200 ``ok``, or 503 with
the cause.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    generate_latest,
)

log = logging.getLogger(__name__)

Probe = Callable[[], str]

POOL_STATES = ("machine", "updated", "ready", "unavailable", "degraded")


class ControllerMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.leader = Gauge(
            "mcd_controller_leader",
            "1 while this replica holds the controller Lease",
            registry=self.registry,
        )
        self.syncs = Counter(
            "mcd_controller_syncs", "Passes over all pools", registry=self.registry
        )
        self.node_updates = Counter(
            "mcd_controller_node_updates",
            "desiredConfig writes, by pool",
            ["pool"],
            registry=self.registry,
        )
        self.machines = Gauge(
            "mcd_controller_pool_machines",
            "Machines of a pool by state (status counts)",
            ["pool", "state"],
            registry=self.registry,
        )
        self.os_image_override = Gauge(
            "mcc_os_image_url_override",
            "1 when a pool's rendered config sets its own osImageURL",
            ["pool"],
            registry=self.registry,
        )

    def pool_status(self, pool: str, status: dict[str, object]) -> None:
        for state in POOL_STATES:
            value = status.get(f"{state}MachineCount", 0)
            self.machines.labels(pool, state).set(float(value) if isinstance(value, int) else 0)


def parse_listen_address(url: str) -> tuple[str, int]:
    rest = url.split("://", 1)[-1].rstrip("/")
    host, sep, port = rest.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"invalid metrics address {url!r}: expected host:port")
    return host.strip("[]") or "0.0.0.0", int(port)


class StatusServer:
    def __init__(
        self, address: str, registry: CollectorRegistry, healthz: Probe, readyz: Probe
    ) -> None:
        host, port = parse_listen_address(address)
        probes = {"/healthz": healthz, "/readyz": readyz}

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if path == "/metrics":
                    self._send(200, generate_latest(registry), CONTENT_TYPE_LATEST)
                elif path in probes:
                    problem = probes[path]()
                    code, text = (503, problem) if problem else (200, "ok")
                    self._send(code, f"{text}\n".encode(), "text/plain; charset=utf-8")
                else:
                    self._send(404, b"not found\n", "text/plain; charset=utf-8")

            def _send(self, code: int, body: bytes, content_type: str) -> None:
                self.send_response(code)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                return

        self.httpd = ThreadingHTTPServer((host, port), Handler)
        self.httpd.daemon_threads = True
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
