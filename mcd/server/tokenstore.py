"""The join-token Secrets in one namespace, through the API server: the CLI creates, lists
and revokes them; the server judges a token and records each use (:mod:`mcd.server.tokens`
says what a token and its Secret are).

The server judges a token from its watch cache (one GET when the cache does not hold the
id). A use is recorded with a PUT conditional on the resourceVersion the token was judged at; on
a conflict (another node's use landed first) the Secret is read again and judged again, so
concurrent joins never take more uses than the token has, and none is refused while one
is left. A revoked (deleted) token is never served: the PUT fails with 404 whatever the
cache held.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime

from mcd.cluster.api import ApiError, Kube, Obj
from mcd.server.tokens import (
    JOINED_WITH,
    LABELS,
    TYPES,
    Grant,
    Issued,
    Refused,
    TokenInfo,
    describe,
    judge,
    new_use_id,
    secret_name,
    token_from,
    with_use,
)

log = logging.getLogger(__name__)

ATTEMPTS = 50
"""Conditional writes tried per use (each conflict means another use was recorded)."""
NODES = "/api/v1/nodes"


class TokenStore:
    """The token Secrets in one namespace (the server reads and records; the CLI creates)."""

    def __init__(
        self, kube: Kube, namespace: str, cached: Callable[[str], Obj | None] | None = None
    ) -> None:
        self.kube = kube
        self.path = f"/api/v1/namespaces/{namespace}/secrets"
        self.cached = cached
        """A token's Secret from the server's watch cache (None: not held, read it)."""

    def create(self, issued: Issued) -> None:
        self.kube.request("POST", self.path, body=issued.secret)

    def all(self, nodes: bool = False) -> list[TokenInfo]:
        """Every join token (in either label domain), oldest expiry first; with ``nodes``,
        the nodes a pool-scoped token served named from the Nodes' annotations."""
        found: dict[str, Obj] = {}
        for label in LABELS:
            listed = self.kube.request("GET", self.path, query={"labelSelector": f"{label}=true"})
            for s in listed.get("items") or []:
                if s.get("type") in TYPES:
                    found[str((s.get("metadata") or {}).get("name") or "")] = s
        served = self.served_nodes() if nodes else {}
        tokens = [describe(s, served) for s in found.values()]
        never = datetime.max.replace(tzinfo=UTC)
        return sorted(tokens, key=lambda t: (t.expires or never, t.token_id))

    def served_nodes(self) -> dict[str, str]:
        """``<token id>.<use id>`` -> the Node carrying it (a 403 on Nodes: none known)."""
        try:
            listed = self.kube.request("GET", NODES)
        except ApiError as e:
            if e.status == 403:
                return {}
            raise
        out = {}
        for node in listed.get("items") or []:
            meta = node.get("metadata") or {}
            use = (meta.get("annotations") or {}).get(JOINED_WITH)
            if use:
                out[str(use)] = str(meta.get("name") or "")
        return out

    def revoke(self, token_id: str) -> None:
        """Delete a token's Secret (404 is an :class:`ApiError` for the caller)."""
        self.kube.request("DELETE", f"{self.path}/{secret_name(token_id)}")

    def _read(self, token_id: str) -> Obj:
        try:
            return self.kube.request("GET", f"{self.path}/{secret_name(token_id)}")
        except ApiError as e:
            if e.status == 404:
                raise Refused(f"unknown join token {token_id}") from None
            raise

    def check(self, header: str | None, pool: str, now: datetime) -> Grant:
        found = token_from(header)
        if found is None:
            raise Refused("no join token" if not header else "malformed join token")
        token_id, token = found
        secret = self.cached(token_id) if self.cached is not None else None
        if secret is None:
            secret = self._read(token_id)
        try:
            node = judge(secret, token, pool, now)
        except Refused as e:
            raise Refused(f"join token {token_id}: {e}") from None
        return Grant(token_id, node, secret, new_use_id(), pool, token)

    def mark_used(self, grant: Grant, record: dict[str, str]) -> None:
        """Record one use, conditional on the Secret as judged; on a conflict read it again,
        judge it again and retry (:class:`Refused` once no use is left)."""
        stored = grant.secret
        path = f"{self.path}/{secret_name(grant.token_id)}"
        for attempt in range(ATTEMPTS):
            try:
                self.kube.request("PUT", path, body=with_use(stored, grant, record))
                return
            except ApiError as e:
                if e.status == 404:
                    raise Refused(f"join token {grant.token_id}: revoked meanwhile") from None
                if e.status != 409:
                    raise
            time.sleep(min(0.2, 0.01 * attempt))
            stored = self._read(grant.token_id)
            try:
                judge(stored, grant.token, grant.pool, datetime.now(UTC))
            except Refused as e:
                raise Refused(f"join token {grant.token_id}: {e}") from None
        raise Refused(f"join token {grant.token_id}: {ATTEMPTS} conflicting writes in a row")
