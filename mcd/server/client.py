"""Fetch a pool's config as a booting node does, for a host without Ignition (``mcd join``):
one GET of ``/config/<pool>`` over TLS, trusting only the given CA, with the join token in
the header a pointer config would send and an Ignition ``Accept`` header. Bounded: 64 MiB,
30 s per socket operation, and ``deadline`` seconds for the whole fetch (connect, TLS,
headers, body), however slowly a server or a proxy drips its answer: at the deadline the
socket is shut and the fetch fails. The token never reaches a log line or an error
message."""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import ssl
import threading
import urllib.parse
from typing import Any

from mcd.server.tokens import HEADER, SCHEME

MAX_BODY = 64 << 20
ACCEPT = "application/vnd.coreos.ignition+json;version=3.5.0, */*;q=0.1"
USER_AGENT = "mcd-join"
DEADLINE = 300.0


class FetchError(Exception):
    pass


def config_url(server: str, pool: str | None) -> tuple[str, str, int, str]:
    """``(url, host, port, path)``: ``server`` is ``https://HOST[:PORT]`` with ``pool``, or
    the whole ``https://HOST[:PORT]/config/POOL``."""
    url = urllib.parse.urlsplit(server)
    if url.scheme != "https" or not url.hostname:
        raise FetchError(f"{server}: not an https:// URL")
    path = url.path.rstrip("/")
    if not path.startswith("/config/"):
        if not pool:
            raise FetchError("give --pool, or a --server URL ending in /config/<pool>")
        path = f"{path}/config/{pool}"
    return f"https://{url.netloc}{path}", url.hostname, url.port or 22623, path


def fetch(
    url: str, host: str, port: int, path: str, token: str, ca: bytes, deadline: float = DEADLINE
) -> Any:
    context = ssl.create_default_context(cadata=ca.decode("ascii", "replace"))
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    conn = http.client.HTTPSConnection(host, port, timeout=min(30.0, deadline), context=context)
    headers = {HEADER: f"{SCHEME} {token}", "Accept": ACCEPT, "User-Agent": USER_AGENT}
    expired = threading.Event()

    def expire() -> None:
        expired.set()
        sock = conn.sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    timer = threading.Timer(deadline, expire)
    timer.daemon = True
    timer.start()
    try:
        conn.connect()
        if expired.is_set():
            raise OSError("deadline")
        conn.request("GET", path, headers=headers)
        response = conn.getresponse()
        if response.status != 200:
            raise FetchError(f"GET {url}: {response.status} {response.reason}")
        body = response.read(MAX_BODY + 1)
        if expired.is_set():  # a body cut short at the deadline
            raise OSError("cut")
    except (OSError, http.client.HTTPException, ValueError) as e:
        if expired.is_set():
            raise FetchError(f"GET {url}: no whole answer within {deadline:.0f}s") from None
        raise FetchError(f"GET {url}: {e}") from None
    finally:
        timer.cancel()
        conn.close()
    if len(body) > MAX_BODY:
        raise FetchError(f"GET {url}: larger than {MAX_BODY >> 20} MiB")
    try:
        return json.loads(body)
    except ValueError:
        raise FetchError(f"GET {url}: the answer is not JSON") from None
