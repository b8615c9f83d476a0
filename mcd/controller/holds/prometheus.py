"""Prometheus' active alerts for the alert gate (kured's ``ActiveAlerts``): the instant query
``ALERTS`` at ``prometheusURL``, asked afresh before the pass that would disrupt a node (its
answer is kept ``ttl`` seconds per URL, so the pools of one pass that name the same Prometheus
share it). A request waits at most ``timeout`` seconds; an error (which holds the pools) is
kept ``error_ttl`` seconds, so a Prometheus that does not answer costs a pass at most
``timeout`` every ``error_ttl``."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mcd.model.holds.gates import AlertGate, active_alerts

MAX_ANSWER = 16 * 1024 * 1024
Fetch = Callable[[str, float], Any]


def fetch_json(url: str, timeout: float) -> Any:
    """GET ``url`` and parse its JSON body (at most :data:`MAX_ANSWER` bytes)."""
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:  # http(s): parse_gates
            body = answer.read(MAX_ANSWER + 1)
    except urllib.error.HTTPError as e:  # Prometheus says what is wrong in JSON
        body = e.read(MAX_ANSWER + 1)
        if not body.lstrip().startswith(b"{"):
            raise OSError(f"HTTP {e.code}") from None
    if len(body) > MAX_ANSWER:
        raise OSError(f"answer longer than {MAX_ANSWER} bytes")
    return json.loads(body)


def query_url(base: str) -> str:
    return base.rstrip("/") + "/api/v1/query?" + urllib.parse.urlencode({"query": "ALERTS"})


@dataclass
class AlertQuery:
    ttl: float = 1.0
    error_ttl: float = 10.0
    timeout: float = 3.0
    clock: Callable[[], float] = time.monotonic
    fetch: Fetch = fetch_json
    _answers: dict[str, tuple[float, Any, str]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, gate: AlertGate) -> tuple[tuple[str, ...], str]:
        """The alerts that hold the pool, and why Prometheus could not say ('' when it did)."""
        url = query_url(gate.url)
        now = self.clock()
        with self._lock:
            kept = self._answers.get(url)
        if kept is None or now - kept[0] >= (self.error_ttl if kept[2] else self.ttl):
            try:
                answer, error = self.fetch(url, self.timeout), ""
            except (OSError, ValueError) as e:  # refused, timed out, not JSON
                answer, error = None, _reason(e)
            kept = (now, answer, error)
            with self._lock:
                if len(self._answers) > 64:
                    self._answers.clear()
                self._answers[url] = kept
        _at, answer, error = kept
        if error:
            return (), error
        try:
            return active_alerts(answer if isinstance(answer, dict) else {}, gate), ""
        except ValueError as e:
            return (), str(e)


def _reason(error: Exception) -> str:
    if isinstance(error, urllib.error.URLError) and not isinstance(error, urllib.error.HTTPError):
        return str(error.reason)[:200]
    return str(error)[:200] or type(error).__name__
