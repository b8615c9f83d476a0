"""Which Ignition spec version to serve, from a request's ``Accept`` header.

Upstream's machine-config-server (``pkg/server/api.go``: ``parseAcceptHeader``,
``detectSpecVersionFromAcceptHeader``), rule for rule:

* the header is a comma-separated list of media ranges; an entry without a ``/`` is
  ignored; of its parameters only the first valid ``version`` (a full semantic version:
  ``3.2.0``, never ``3.2`` or ``1``) and the first valid ``q`` count; ``q`` defaults to 1;
* entries are tried by descending ``q`` (a stable sort: equal ``q`` keep their order);
  the first ``application/vnd.coreos.ignition+json`` entry with a version decides;
* no Ignition entry with a version (``curl``, a browser, no header) -> spec 2.2.0;
* 2.x at or above 2.2 -> 2.2.0; 3.x -> the supported version of that minor; a 3.x newer
  than the newest served -> the newest served (3.5.0); anything else (1.x, 2.0, 2.1, 4.0)
  -> :class:`UnsupportedAcceptError` (the server answers 400).

One deliberate difference: upstream names 3.0 supported but cannot convert down to it
(its converter has no 3.x -> 3.0 path, so a 3.0 client gets a 500); mcd serves 3.0.0.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

IGNITION_SUBTYPE = "vnd.coreos.ignition+json"
DEFAULT_VERSION = "2.2.0"
NEWEST_VERSION = "3.5.0"
SERVED_MINORS = {(2, 2): "2.2.0", **{(3, m): f"3.{m}.0" for m in range(6)}}
"""Every version :mod:`mcd.model.ignition.convert` produces, by (major, minor)."""

MAX_ENTRIES = 64
"""Entries of one header looked at, at most (a booting Ignition sends two or three)."""

_SEMVER = re.compile(
    r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?"
)


@dataclass(frozen=True, order=True)
class Version:
    major: int
    minor: int
    patch: int
    pre: str = ""

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}" + (f"-{self.pre}" if self.pre else "")

    def below(self, other: Version) -> bool:
        """Semantic-version order: a pre-release sorts before its release."""
        mine, theirs = (self.major, self.minor, self.patch), (other.major, other.minor, other.patch)
        if mine != theirs:
            return mine < theirs
        return bool(self.pre) and not other.pre


@dataclass(frozen=True)
class AcceptValue:
    mime_type: str
    mime_subtype: str
    version: Version | None
    q: float


class UnsupportedAcceptError(ValueError):
    """An Ignition version this server cannot serve; the message never quotes the whole
    header (it can be as long as the server lets a header line be)."""


def parse_version(text: str) -> Version | None:
    """A semantic version as go-semver's ``NewVersion`` accepts it, else None."""
    m = _SEMVER.fullmatch(text)
    if m is None:
        return None
    return Version(int(m[1]), int(m[2]), int(m[3]), m[4] or "")


def _parse_q(text: str) -> float | None:
    try:
        q = float(text)
    except ValueError:
        return None
    return None if math.isnan(q) else q


def parse_accept(header: str) -> list[AcceptValue]:
    """The entries of an ``Accept`` header, highest ``q`` first (upstream ``parseAcceptHeader``)."""
    values: list[AcceptValue] = []
    for raw in header.split(",", MAX_ENTRIES)[:MAX_ENTRIES]:
        parts = [p.strip() for p in raw.strip().split(";")]
        if "/" not in parts[0]:
            continue
        mime_type, _, subtype = parts[0].partition("/")
        version: Version | None = None
        q: float | None = None
        seen_version = seen_q = False
        for ext in parts[1:]:
            key, eq, value = ext.partition("=")
            if not eq:
                continue
            if key == "version" and not seen_version:
                version = parse_version(value)
                seen_version = version is not None
            elif key == "q" and not seen_q:
                q = _parse_q(value)
                seen_q = q is not None
        values.append(AcceptValue(mime_type, subtype, version, 1.0 if q is None else q))
    values.sort(key=lambda v: -v.q)  # stable, as Go's sort.SliceStable
    return values


def spec_version(header: str) -> str:
    """The spec version to serve for ``header`` (upstream ``detectSpecVersionFromAcceptHeader``)."""
    for value in parse_accept(header):
        requested = value.version
        if value.mime_subtype != IGNITION_SUBTYPE or requested is None:
            continue
        minor = (requested.major, requested.minor)
        if requested.major == 2 and not requested.below(Version(2, 2, 0)):
            minor = (2, 2)
        served = SERVED_MINORS.get(minor)
        if served is not None:
            return served
        if requested.major == 3 and requested.minor > 5:
            return NEWEST_VERSION
        raise UnsupportedAcceptError(f"unsupported Ignition version in Accept header: {requested}")
    return DEFAULT_VERSION
