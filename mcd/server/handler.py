"""One request to the machine-config-server, answered (upstream ``APIHandler.ServeHTTP``,
``healthHandler``, ``defaultHandler`` in ``pkg/server/api.go``).

* ``/config/<pool>``: GET and HEAD only (405 otherwise); the ``Accept`` header picks the
  spec version (400 when none can be served); 404 for an unknown pool; 500 with an empty
  body when the config cannot be read, built or converted; 200 with ``Content-Type:
  application/json`` and ``Content-Length`` (HEAD: the headers only). Every request is
  logged with the pool, the address, the User-Agent and the Accept header, in upstream's
  words (each value cut to 200 characters).
* ``/healthz``: 200 to GET and HEAD, 405 otherwise; any other path: 404 or 405.
* ``<pool>`` is one path segment naming a Kubernetes object; anything else (``..``,
  an encoded ``/``, a nested path) is 404 before any lookup. Upstream takes
  ``path.Base`` of the cleaned path instead, so ``/config/x/worker`` serves ``worker``.
* With join tokens required, a request without a valid token for that pool gets 403 and a
  log line naming why (and the token's id, never the token), before any lookup: an
  unauthenticated client cannot tell which pools exist. HEAD gets 403 whatever it carries
  (no token is even looked at): it would otherwise tell a valid token from an invalid one
  without using it up. A GET served with a token records the use, and the served
  node-annotations file names it (``mcd-project.github.io/joined-with``).
* The body is built once per pool, spec version and inputs, and reused
  (:mod:`mcd.server.prepared`).
"""

from __future__ import annotations

import logging
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Protocol

from mcd.cluster.api import ApiError
from mcd.model.errors import ConfigError
from mcd.model.ignition.accept import UnsupportedAcceptError, spec_version
from mcd.model.ignition.served import Extras
from mcd.server.prepared import Prepared
from mcd.server.source import PoolConfig, PoolNotFound
from mcd.server.tokens import (
    HEADER,
    JOINED_WITH,
    Grant,
    Refused,
    pool_name_problem,
    use_record,
)

log = logging.getLogger(__name__)

_LOGGED = 200


class Source(Protocol):
    def pool_config(self, pool_name: str) -> PoolConfig: ...

    def extras(self) -> Extras: ...


class Tokens(Protocol):
    def check(self, header: str | None, pool: str, now: datetime) -> Grant: ...

    def mark_used(self, grant: Grant, record: dict[str, str]) -> None: ...


@dataclass(frozen=True)
class Response:
    status: int
    body: bytes = b""
    headers: Mapping[str, str] = field(default_factory=dict)


def _empty(status: int) -> Response:
    return Response(status)


def _cut(value: str) -> str:
    return value if len(value) <= _LOGGED else value[:_LOGGED] + "..."


def pool_of(raw_path: str) -> str | None:
    """The pool a ``/config/...`` path names, or None for anything but one plain name."""
    path = raw_path.split("?", 1)[0].split("#", 1)[0]
    if not path.startswith("/config/"):
        return None
    name = urllib.parse.unquote(path[len("/config/") :], errors="strict")
    return name if pool_name_problem(name) is None else None


class Handler:
    def __init__(
        self,
        source: Source,
        tokens: Tokens | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        prepared: Prepared | None = None,
    ) -> None:
        self.source = source
        self.tokens = tokens
        self.clock = clock
        self.prepared = prepared if prepared is not None else Prepared()

    def respond(
        self, method: str, raw_path: str, headers: Mapping[str, str], address: str
    ) -> Response:
        path = raw_path.split("?", 1)[0]
        if path == "/healthz":
            return _empty(200 if method in ("GET", "HEAD") else 405)
        if not path.startswith("/config/"):
            return _empty(404 if method in ("GET", "HEAD") else 405)
        if method not in ("GET", "HEAD"):
            return _empty(405)
        try:
            pool = pool_of(raw_path)
        except UnicodeDecodeError:
            pool = None
        agent, accept = headers.get("User-Agent", ""), headers.get("Accept", "")
        log.info(
            "Pool %r requested by address:%r User-Agent:%r Accept-Header: %r",
            _cut(pool or path), address, _cut(agent), _cut(accept),
        )  # fmt: skip
        if pool is None:
            return _empty(404)
        try:
            version = spec_version(accept)
        except UnsupportedAcceptError as e:
            log.error("%s", e)
            return _empty(400)
        grant = None
        if self.tokens is not None:
            if method == "HEAD":  # the same answer for any token: HEAD never probes one
                log.warning("Refused pool %r to address:%r: HEAD with join tokens", pool, address)
                return _empty(403)
            try:
                grant = self.tokens.check(headers.get(HEADER), pool, self.clock())
            except Refused as e:
                log.warning("Refused pool %r to address:%r: %s", pool, address, e)
                return _empty(403)
            except (ApiError, OSError) as e:
                log.error("couldn't check the join token for pool %r: %s", pool, e)
                return _empty(500)
        return self._serve(method, pool, version, grant, address, agent)

    def _serve(
        self, method: str, pool: str, version: str, grant: Grant | None, address: str, agent: str
    ) -> Response:
        try:
            found = self.source.pool_config(pool)
            extras = self.source.extras()
            if grant is not None:
                extras = replace(extras, annotations={JOINED_WITH: grant.joined_with})
            body = self.prepared.body(pool, found.machine_config, found.name, version, extras)
        except PoolNotFound:
            self.prepared.forget(pool)
            return _empty(404)
        except (ApiError, OSError, LookupError, ConfigError) as e:
            # the model's errors name fields and paths, never contents
            log.error("couldn't get config for pool %r (spec %s): %s", pool, version, e)
            return _empty(500)
        if grant is not None:
            assert self.tokens is not None
            try:
                record = use_record(address, agent, found.name, version, self.clock())
                self.tokens.mark_used(grant, record)
            except Refused as e:
                log.warning("Refused pool %r to address:%r: %s", pool, address, e)
                return _empty(403)
            except (ApiError, OSError) as e:
                log.error("couldn't mark join token %s used: %s", grant.token_id, e)
                return _empty(500)
            log.info(
                "Served %s (spec %s) to %s with join token %s (use %s), address:%r",
                found.name, version, f"node {grant.node!r}" if grant.node else "a node",
                grant.token_id, grant.use_id, address,
            )  # fmt: skip
        headers = {"Content-Type": "application/json", "Content-Length": str(len(body))}
        return Response(200, b"" if method == "HEAD" else body, headers)
