"""Who may scrape ``/metrics``: the scraper's bearer token checked by the API server, as
kube-rbac-proxy does in front of upstream's metrics (a ``TokenReview`` authenticates it, a
``SubjectAccessReview`` asks whether that user may ``get`` the non-resource URL
``/metrics``). Answers are cached for a short while, keyed by a hash of the token (never the
token itself), so a scrape every few seconds costs no API request."""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable

from mcd.cluster.api import ApiError, Kube
from mcd.host.statusserver import parse_listen_address

log = logging.getLogger(__name__)

TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
CACHE_SECONDS = 30.0
CACHE_SIZE = 256
LOOPBACK = ("127.", "localhost", "::1")


def guarded(auth: str, url: str) -> bool:
    """Whether /metrics at ``url`` asks the API server about each scraper's token (``auth``:
    token | none | auto: a token unless the listener is on loopback)."""
    if auth != "auto":
        return auth == "token"
    host, _ = parse_listen_address(url)
    return not host.startswith(LOOPBACK)


class ScraperCheck:
    """``check(token)``: '' when the token's user may get ``path``, else why not (one line)."""

    def __init__(
        self, kube: Kube, path: str = "/metrics", clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.kube, self.path, self.clock = kube, path, clock
        self._cache: dict[str, tuple[float, str]] = {}
        self._lock = threading.Lock()

    def __call__(self, token: str) -> str:
        key = hashlib.sha256(token.encode()).hexdigest()
        now = self.clock()
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None and now - hit[0] < CACHE_SECONDS:
                return hit[1]
        try:
            verdict = self._review(token)
        except ApiError as e:  # not cached: the next scrape asks again
            log.warning("Could not review a scraper's token: %s", e)
            return f"could not review the token: {e.reason or e.status}"
        with self._lock:
            if len(self._cache) >= CACHE_SIZE:
                self._cache.clear()
            self._cache[key] = (now, verdict)
        return verdict

    def _review(self, token: str) -> str:
        review = self.kube.request("POST", TOKEN_REVIEWS, body={
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
            "spec": {"token": token}})  # fmt: skip
        status = review.get("status") or {}
        if not status.get("authenticated"):
            return "the token is not valid"
        user = status.get("user") or {}
        access = self.kube.request("POST", ACCESS_REVIEWS, body={
            "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"user": user.get("username", ""), "uid": user.get("uid", ""),
                     "groups": user.get("groups") or [], "extra": user.get("extra") or {},
                     "nonResourceAttributes": {"path": self.path, "verb": "get"}}})  # fmt: skip
        if (access.get("status") or {}).get("allowed"):
            return ""
        return f"{user.get('username', 'the user')} may not get {self.path}"
