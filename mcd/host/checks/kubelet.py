"""The kubelet's health endpoint (upstream 1.4: ``http://localhost:10248/healthz`` every 30 s)."""

from __future__ import annotations

import logging
import urllib.error
import urllib.request

log = logging.getLogger(__name__)

DEFAULT_ENDPOINT = "http://localhost:10248/healthz"


class KubeletUnhealthy(Exception):
    """The endpoint could not be reached (transport error or an HTTP error status)."""


def check_kubelet(endpoint: str = DEFAULT_ENDPOINT, timeout: float = 30.0) -> str:
    """The body the kubelet answered; :class:`KubeletUnhealthy` when it did not answer."""
    try:
        with urllib.request.urlopen(endpoint, timeout=timeout) as response:  # http only
            body: bytes = response.read(4096)
    except (urllib.error.URLError, OSError, ValueError) as e:
        raise KubeletUnhealthy(str(getattr(e, "reason", e))) from e
    text = body.decode(errors="replace").strip()
    if text != "ok":
        log.warning("kubelet health check returned unexpected output: %s", text[:200])
    return text
