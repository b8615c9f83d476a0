"""Join tokens: for one node or for up to N nodes of one pool, until they expire (beyond
upstream; the pool-scoped kind as kubeadm's bootstrap tokens: an id, a secret, a use
limit and an expiry, kept in a Secret).

Upstream's server authenticates nobody: whoever reaches port 22623 gets a pool's whole
config (pull secret, bootstrap kubeconfig), and OpenShift relies on the network plugin
to keep pods away from the port. ``mcd join-token create`` issues a token instead, for one
node (``NODE``, one use) or for a fleet (``--uses N``: an autoscaling group's launch
template shared by every instance); ``mcd server --require-join-token`` answers
``/config/<pool>`` only to a GET carrying a valid one, in the ``Authorization: Bearer``
header a pointer Ignition config sends (``ignition.config.replace.httpHeaders``).

A token is ``mcdjt.<id>.<secret>``. The Secret ``mcd-join-<id>`` in the tokens' own
namespace (``mcd-join-tokens``: the server may read and update Secrets there and nowhere
else) keeps only the SHA-256 of the whole token (never the token), the pool, the node (none
for a pool-scoped token), the number of uses and the expiry. Each use is recorded on the
Secret (its id, when, from which address, which config in which spec version, the node when
the token names one) with a write conditional on its resourceVersion: two requests racing
never take more uses than the token has. A node served with a token carries the use on its
Node (``mcd-project.github.io/joined-with: <id>.<use>``, from the node-annotations file),
so ``join-token list`` names the nodes a pool-scoped token served. Only the id, which is no
secret, ever reaches a log line.

The Secrets' label, type and annotations are in mcd's domain ``mcd-project.github.io/``;
Secrets written before in ``mcd.openshift.io/`` are read as well (their tokens keep
working; a use is recorded in the new domain).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

Obj = dict[str, Any]

PREFIX = "mcdjt"
HEADER = "Authorization"
SCHEME = "Bearer"
DOMAIN = "mcd-project.github.io/"
OLD_DOMAIN = "mcd.openshift.io/"
"""The domain the first join tokens were written in: still read, never written."""
SECRET_TYPE = DOMAIN + "join-token"
LABEL = DOMAIN + "join-token"
TYPES = (SECRET_TYPE, OLD_DOMAIN + "join-token")
LABELS = (LABEL, OLD_DOMAIN + "join-token")
USED = DOMAIN + "used"
"""``"true"`` once no use is left."""
USED_AT = DOMAIN + "used-at"
USED_FROM = DOMAIN + "used-from"
USED_AGENT = DOMAIN + "used-by-user-agent"
SERVED = DOMAIN + "served-config"
SERVED_VERSION = DOMAIN + "served-spec-version"
USES = DOMAIN + "uses"
"""Every use, as a JSON list of records (the flat keys above say the latest)."""
JOINED_WITH = DOMAIN + "joined-with"
"""On a Node served with a token: ``<token id>.<use id>``."""
MAX_TTL = timedelta(days=7)
MAX_USES = 500
"""Each use is a record on the Secret (a couple of hundred bytes; annotations hold 256 KiB)."""
TOKEN_NAMESPACE = "mcd-join-tokens"

_TOKEN = re.compile(rf"{PREFIX}\.([0-9a-f]{{16}})\.([A-Za-z0-9_-]{{43}})")
_STAMP = "%Y-%m-%dT%H:%M:%SZ"


class Refused(Exception):
    """Why a request gets 403 (for the log; the client learns nothing more)."""


@dataclass(frozen=True)
class Issued:
    token: str
    token_id: str
    secret: Obj


@dataclass(frozen=True)
class Grant:
    """A token found valid for a pool: what to record once the config is ready."""

    token_id: str
    node: str
    secret: Obj
    use_id: str = ""
    """This use's id (random), put on the served node as ``JOINED_WITH``."""
    pool: str = ""
    token: str = field(default="", repr=False)
    """To judge the token again when another use was recorded first (never logged)."""

    @property
    def joined_with(self) -> str:
        return f"{self.token_id}.{self.use_id}"


def secret_name(token_id: str) -> str:
    return f"mcd-join-{token_id}"


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _data(secret: Mapping[str, Any], key: str) -> str:
    raw = (secret.get("data") or {}).get(key) or ""
    try:
        return base64.b64decode(raw, validate=True).decode()
    except (ValueError, UnicodeDecodeError):
        return ""


def _rfc3339(when: datetime) -> str:
    return when.astimezone(UTC).strftime(_STAMP)


def _when(text: str) -> datetime | None:
    try:
        return datetime.strptime(text, _STAMP).replace(tzinfo=UTC)
    except ValueError:
        return None


def note(secret: Mapping[str, Any], key: str) -> str:
    """An annotation of a token Secret, in mcd's domain or, written before, the old one."""
    annotations = (secret.get("metadata") or {}).get("annotations") or {}
    value = annotations.get(key)
    if value is None and key.startswith(DOMAIN):
        value = annotations.get(OLD_DOMAIN + key.removeprefix(DOMAIN))
    return str(value or "")


def issue(node: str, pool: str, ttl: timedelta, now: datetime, uses: int = 1) -> Issued:
    """A new token and the Secret that stands for it (not yet stored): for ``node`` (one
    use), or, with no node, for up to ``uses`` nodes of ``pool``."""
    if not timedelta(0) < ttl <= MAX_TTL:
        raise ValueError(f"--ttl must be more than 0 and at most {MAX_TTL.days} days")
    if not 1 <= uses <= MAX_USES or (node and uses != 1):
        raise ValueError(f"--uses must be 1 to {MAX_USES}, and 1 for a token naming a node")
    token_id = secrets.token_hex(8)
    token = f"{PREFIX}.{token_id}.{secrets.token_urlsafe(32)}"
    data = {"sha256": digest(token), "pool": pool, "expires": _rfc3339(now + ttl)}
    data.update({"node": node} if node else {"uses": str(uses)})
    secret: Obj = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": SECRET_TYPE,
        "metadata": {"name": secret_name(token_id), "labels": {LABEL: "true"}},
        "data": {k: _b64(v) for k, v in data.items()},
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


def limit_of(secret: Mapping[str, Any]) -> int:
    """How many uses the token has (1 for a token naming a node, or with no usable number)."""
    try:
        return max(1, int(_data(secret, "uses") or "1"))
    except ValueError:
        return 1


def uses_of(secret: Mapping[str, Any]) -> list[dict[str, str]]:
    """The uses recorded so far (a token used in the old domain: one, from its flat keys)."""
    try:
        found = json.loads(note(secret, USES) or "[]")
    except ValueError:
        found = None
    if isinstance(found, list):
        records = [{str(k): str(v) for k, v in r.items()} for r in found if isinstance(r, dict)]
        if records or note(secret, USED) != "true":
            return records
    if note(secret, USED) == "true":  # a use recorded before the list
        return [{"at": note(secret, USED_AT), "from": note(secret, USED_FROM),
                 "config": note(secret, SERVED), "node": _data(secret, "node")}]  # fmt: skip
    return []


def judge(secret: Mapping[str, Any], token: str, pool: str, now: datetime) -> str:
    """The node a stored token was issued for ("" for a pool-scoped token), if ``token`` is
    it and may fetch ``pool`` now; :class:`Refused` otherwise."""
    if secret.get("type") not in TYPES:
        raise Refused("not a join token")
    if not hmac.compare_digest(digest(token), _data(secret, "sha256")):
        raise Refused("wrong token")
    limit = limit_of(secret)
    if len(uses_of(secret)) >= limit:
        raise Refused("token already used" if limit == 1 else f"token used up ({limit} uses)")
    expires = _when(_data(secret, "expires"))
    if expires is None:
        raise Refused("token without a valid expiry")
    if now >= expires:
        raise Refused("token expired")
    if _data(secret, "pool") != pool:
        raise Refused("token issued for another pool")
    return _data(secret, "node")


_SHORT = {USED_AT: "at", USED_FROM: "from", USED_AGENT: "agent", SERVED: "config",
          SERVED_VERSION: "version"}  # fmt: skip


def with_use(secret: Mapping[str, Any], grant: Grant, record: Mapping[str, str]) -> Obj:
    """``secret`` with one more use recorded: the list, the flat keys of the latest use, and
    ``used`` once none is left."""
    uses = uses_of(secret)
    entry = {"id": grant.use_id, **{short: record[key] for key, short in _SHORT.items()
                                    if key in record}}  # fmt: skip
    if grant.node:
        entry["node"] = grant.node
    uses.append(entry)
    meta = dict(secret.get("metadata") or {})
    annotations = dict(meta.get("annotations") or {})
    annotations.update(record)
    annotations[USES] = json.dumps(uses, separators=(",", ":"))
    if len(uses) >= limit_of(secret):
        annotations[USED] = "true"
    meta["annotations"] = annotations
    return {**secret, "metadata": meta}


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
    """The node the token was issued for; "" for a pool-scoped token."""
    pool: str
    expires: datetime | None
    limit: int
    uses: tuple[Mapping[str, str], ...]
    """Each use: ``id``, ``at``, ``from``, ``config``, ``node`` (when known)."""

    @property
    def used(self) -> bool:
        return len(self.uses) >= self.limit

    @property
    def remaining(self) -> int:
        return max(0, self.limit - len(self.uses))

    @property
    def used_at(self) -> datetime | None:
        return _when(self.uses[-1].get("at", "")) if self.uses else None

    @property
    def used_from(self) -> str:
        return self.uses[-1].get("from", "") if self.uses else ""


def describe(secret: Mapping[str, Any], nodes: Mapping[str, str] | None = None) -> TokenInfo:
    """A token Secret as ``join-token list`` shows it; ``nodes``: the Nodes' ``JOINED_WITH``
    annotations (``<id>.<use>`` -> node name), naming the nodes a pool-scoped token served."""
    name = str((secret.get("metadata") or {}).get("name") or "")
    token_id = name.removeprefix("mcd-join-")
    uses = []
    for use in uses_of(secret):
        served = (nodes or {}).get(f"{token_id}.{use.get('id', '')}")
        uses.append({**use, "node": served} if served and not use.get("node") else use)
    return TokenInfo(
        token_id=token_id,
        node=_data(secret, "node"),
        pool=_data(secret, "pool"),
        expires=_when(_data(secret, "expires")),
        limit=limit_of(secret),
        uses=tuple(uses),
    )


def use_record(
    address: str, agent: str, config: str, version: str, now: datetime
) -> dict[str, str]:
    return {
        USED_AT: _rfc3339(now),
        USED_FROM: address[:100],
        USED_AGENT: agent[:100],
        SERVED: config,
        SERVED_VERSION: version,
    }


def new_use_id() -> str:
    return secrets.token_hex(4)
