"""Join tokens: one per node, for one pool, used once, until it expires (beyond upstream).

Upstream's server authenticates nobody: whoever reaches port 22623 gets a pool's whole
config (pull secret, bootstrap kubeconfig), and OpenShift relies on the network plugin
to keep pods away from the port. ``mcd join-token create`` issues a token for one node
instead; ``mcd server --require-join-token`` answers ``/config/<pool>`` only to a request
carrying a valid one, in the ``Authorization: Bearer`` header a pointer Ignition config
sends (``ignition.config.replace.httpHeaders``).

A token is ``mcdjt.<id>.<secret>``. The Secret ``mcd-join-<id>`` in the tokens' own
namespace (``mcd-join-tokens``: the server may read and update Secrets there and nowhere
else) keeps only the SHA-256 of the whole token (never the token), the pool, the node
and the expiry; the server compares hashes in constant time, and marks the Secret used
with a write conditional on its resourceVersion, so two requests racing with one token
cannot both get the config. The use is recorded on the Secret (when, from which
address, which config in which spec version). Only the id, which is no secret, ever
reaches a log line.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from mcd.cluster.api import ApiError, Kube, Obj

PREFIX = "mcdjt"
HEADER = "Authorization"
SCHEME = "Bearer"
SECRET_TYPE = "mcd.openshift.io/join-token"
LABEL = "mcd.openshift.io/join-token"
USED = "mcd.openshift.io/used"
USED_AT = "mcd.openshift.io/used-at"
USED_FROM = "mcd.openshift.io/used-from"
USED_AGENT = "mcd.openshift.io/used-by-user-agent"
SERVED = "mcd.openshift.io/served-config"
SERVED_VERSION = "mcd.openshift.io/served-spec-version"
MAX_TTL = timedelta(days=7)
TOKEN_NAMESPACE = "mcd-join-tokens"

_TOKEN = re.compile(rf"{PREFIX}\.([0-9a-f]{{16}})\.([A-Za-z0-9_-]{{43}})")


class Refused(Exception):
    """Why a request gets 403 (for the log; the client learns nothing more)."""


@dataclass(frozen=True)
class Issued:
    token: str
    token_id: str
    secret: Obj


@dataclass(frozen=True)
class Grant:
    """A token found valid for a pool: what to mark used once the config is ready."""

    token_id: str
    node: str
    secret: Obj


def secret_name(token_id: str) -> str:
    return f"mcd-join-{token_id}"


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _data(secret: Obj, key: str) -> str:
    raw = (secret.get("data") or {}).get(key) or ""
    try:
        return base64.b64decode(raw, validate=True).decode()
    except (ValueError, UnicodeDecodeError):
        return ""


def _rfc3339(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def issue(node: str, pool: str, ttl: timedelta, now: datetime) -> Issued:
    """A new token and the Secret that stands for it (not yet stored)."""
    if not timedelta(0) < ttl <= MAX_TTL:
        raise ValueError(f"--ttl must be more than 0 and at most {MAX_TTL.days} days")
    token_id = secrets.token_hex(8)
    token = f"{PREFIX}.{token_id}.{secrets.token_urlsafe(32)}"
    secret: Obj = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": SECRET_TYPE,
        "metadata": {"name": secret_name(token_id), "labels": {LABEL: "true"}},
        "data": {
            "sha256": _b64(digest(token)),
            "pool": _b64(pool),
            "node": _b64(node),
            "expires": _b64(_rfc3339(now + ttl)),
        },
    }
    return Issued(token, token_id, secret)


def token_from(header: str | None) -> tuple[str, str] | None:
    """``(token id, token)`` from an ``Authorization`` header value, None if malformed."""
    if not header:
        return None
    scheme, _, value = header.strip().partition(" ")
    if scheme.lower() != SCHEME.lower():
        return None
    m = _TOKEN.fullmatch(value.strip())
    return (m[1], m[0]) if m else None


def judge(secret: Obj, token: str, pool: str, now: datetime) -> str:
    """The node a stored token was issued for, if ``token`` is it and may fetch ``pool`` now;
    :class:`Refused` otherwise."""
    if secret.get("type") != SECRET_TYPE:
        raise Refused("not a join token")
    if not hmac.compare_digest(digest(token), _data(secret, "sha256")):
        raise Refused("wrong token")
    annotations = (secret.get("metadata") or {}).get("annotations") or {}
    if annotations.get(USED) == "true":
        raise Refused("token already used")
    try:
        expires = datetime.strptime(_data(secret, "expires"), "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        raise Refused("token without a valid expiry") from None
    if now >= expires.replace(tzinfo=UTC):
        raise Refused("token expired")
    if _data(secret, "pool") != pool:
        raise Refused("token issued for another pool")
    return _data(secret, "node")


POOL_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")
TOKEN_ID = re.compile(r"[0-9a-f]{16}")


def pool_name_problem(pool: str) -> str | None:
    """Why ``pool`` cannot name a pool (a Kubernetes object name, as ``/config/<pool>``
    takes it), or None."""
    if not POOL_NAME.fullmatch(pool) or ".." in pool:
        return f"{pool!r} is not a pool name (lower-case letters, digits, '-' and '.')"
    return None


@dataclass(frozen=True)
class TokenInfo:
    """What ``join-token list`` shows of a token: never the token or its hash."""

    token_id: str
    node: str
    pool: str
    expires: datetime | None
    used_at: datetime | None
    used_from: str
    used: bool


def _when(text: str) -> datetime | None:
    try:
        return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return None


def describe(secret: Obj) -> TokenInfo:
    meta = secret.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    name = str(meta.get("name") or "")
    return TokenInfo(
        token_id=name.removeprefix("mcd-join-"),
        node=_data(secret, "node"),
        pool=_data(secret, "pool"),
        expires=_when(_data(secret, "expires")),
        used_at=_when(str(annotations.get(USED_AT) or "")),
        used_from=str(annotations.get(USED_FROM) or ""),
        used=annotations.get(USED) == "true",
    )


class TokenStore:
    """The token Secrets in one namespace (the server reads and marks; the CLI creates)."""

    def __init__(self, kube: Kube, namespace: str) -> None:
        self.kube = kube
        self.path = f"/api/v1/namespaces/{namespace}/secrets"

    def create(self, issued: Issued) -> None:
        self.kube.request("POST", self.path, body=issued.secret)

    def all(self) -> list[TokenInfo]:
        """Every join token, oldest expiry first."""
        found = self.kube.request("GET", self.path, query={"labelSelector": f"{LABEL}=true"})
        tokens = [describe(s) for s in found.get("items") or [] if s.get("type") == SECRET_TYPE]
        never = datetime.max.replace(tzinfo=UTC)
        return sorted(tokens, key=lambda t: (t.expires or never, t.token_id))

    def revoke(self, token_id: str) -> None:
        """Delete a token's Secret (404 is an :class:`ApiError` for the caller)."""
        self.kube.request("DELETE", f"{self.path}/{secret_name(token_id)}")

    def check(self, header: str | None, pool: str, now: datetime) -> Grant:
        found = token_from(header)
        if found is None:
            raise Refused("no join token" if not header else "malformed join token")
        token_id, token = found
        try:
            secret = self.kube.request("GET", f"{self.path}/{secret_name(token_id)}")
        except ApiError as e:
            if e.status == 404:
                raise Refused(f"unknown join token {token_id}") from None
            raise
        try:
            node = judge(secret, token, pool, now)
        except Refused as e:
            raise Refused(f"join token {token_id}: {e}") from None
        return Grant(token_id, node, secret)

    def mark_used(self, grant: Grant, record: dict[str, str]) -> None:
        """Mark the token used, conditional on the Secret not having changed since it was
        judged (a 409 means another request used it first: :class:`Refused`)."""
        secret: dict[str, Any] = dict(grant.secret)
        meta = dict(secret.get("metadata") or {})
        meta["annotations"] = {**(meta.get("annotations") or {}), USED: "true", **record}
        secret["metadata"] = meta
        try:
            self.kube.request("PUT", f"{self.path}/{secret_name(grant.token_id)}", body=secret)
        except ApiError as e:
            if e.status in (404, 409):
                raise Refused(f"join token {grant.token_id}: used by another request") from None
            raise


def use_record(
    address: str, agent: str, config: str, version: str, now: datetime
) -> dict[str, str]:
    return {
        USED_AT: _rfc3339(now),
        USED_FROM: address[:100],
        USED_AGENT: agent[:200],
        SERVED: config,
        SERVED_VERSION: version,
    }
