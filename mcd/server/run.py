"""``mcd server``: the composition root (upstream ``cmd/machine-config-server start``).

Both ports serve the same handler, as upstream's secure and insecure servers do; a port
of 0 is off. The ports open once the watch caches have synced (upstream
``NewClusterServer`` waits for its listers the same way). The process runs until SIGTERM
or SIGINT, then closes its sockets and lets the requests in flight finish.
"""

from __future__ import annotations

import logging
import signal
import threading
from dataclasses import dataclass
from types import FrameType

from mcd.cluster.api import Kube, load_client
from mcd.server.caches import CachedSource
from mcd.server.handler import Handler
from mcd.server.listener import CertReloader, Listener
from mcd.server.tokens import TOKEN_NAMESPACE
from mcd.server.tokenstore import TokenStore

log = logging.getLogger(__name__)

SECURE_PORT = 22623
INSECURE_PORT = 22624


@dataclass(frozen=True)
class Settings:
    kubeconfig: str | None = None
    namespace: str = "mcd"
    token_namespace: str = TOKEN_NAMESPACE
    bind_address: str = "0.0.0.0"
    secure_port: int = SECURE_PORT
    insecure_port: int = INSECURE_PORT
    cert: str = ""
    key: str = ""
    require_join_token: bool = False
    apiserver_url: str = ""
    bootstrap_token_dir: str = ""
    workers: int = 16


def listeners(settings: Settings, handler: Handler) -> list[Listener]:
    out: list[Listener] = []
    try:
        if settings.secure_port:
            tls = CertReloader(settings.cert, settings.key)
            out.append(
                Listener(
                    handler, settings.bind_address, settings.secure_port, tls, settings.workers
                )
            )
        if settings.insecure_port:
            out.append(
                Listener(
                    handler, settings.bind_address, settings.insecure_port, None, settings.workers
                )
            )
    except BaseException:
        for listener in out:
            listener.stop()
        raise
    return out


def build_handler(settings: Settings) -> tuple[Handler, CachedSource]:
    kube = Kube(load_client(settings.kubeconfig), timeout=10.0)
    source = CachedSource(
        kube,
        settings.namespace,
        settings.apiserver_url,
        settings.bootstrap_token_dir,
        settings.token_namespace if settings.require_join_token else "",
    )
    tokens = (
        TokenStore(kube, settings.token_namespace, source.token_secret)
        if settings.require_join_token
        else None
    )
    return Handler(source, tokens), source


def run(settings: Settings) -> int:
    handler, source = build_handler(settings)
    stop = threading.Event()

    def on_signal(signum: int, _: FrameType | None) -> None:
        log.info("Signal %d: stopping", signum)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    if not source.start(stop):  # upstream waits for its caches too: no port until then
        return 0
    running = listeners(settings, handler)
    for listener in running:
        listener.start()
        log.info(
            "Launching server on %s:%d (%s)%s",
            settings.bind_address, listener.port, "TLS" if listener.tls else "plain",
            ", join tokens required" if settings.require_join_token else "",
        )  # fmt: skip
    try:
        stop.wait()
    finally:
        for listener in running:
            listener.stop()
    return 0
