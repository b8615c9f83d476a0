"""Is a ``registries.conf`` change safe to apply without draining? (upstream drain.go)

A change is safe when every image a running pod could pull before can still be
pulled the same way after: search registries only appended, no registry or
mirror removed, no location, prefix, blocking or TLS change, and new mirrors
used for digest pulls only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcd.model.text import goquote

DIGEST_ONLY = "digest-only"


@dataclass(frozen=True)
class Mirror:
    location: str
    insecure: bool
    pull_from_mirror: str


@dataclass(frozen=True)
class Registry:
    prefix: str
    location: str
    insecure: bool
    blocked: bool
    mirror_by_digest_only: bool
    mirrors: tuple[Mirror, ...]

    @property
    def key(self) -> str:
        return self.prefix or self.location

    def digest_only(self, mirror: Mirror) -> bool:
        if mirror.pull_from_mirror:
            return mirror.pull_from_mirror == DIGEST_ONLY
        return self.mirror_by_digest_only


@dataclass(frozen=True)
class RegistriesConf:
    search: tuple[str, ...] = ()
    registries: tuple[Registry, ...] = ()


class RegistriesConfError(ValueError):
    pass


def parse_registries_conf(data: bytes) -> RegistriesConf:
    """Parse the V2 TOML format; ``RegistriesConfError`` if it is not that."""
    import tomllib  # noqa: PLC0415  (read only when a plan meets a registries.conf)

    try:
        doc = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise RegistriesConfError(f"invalid registries.conf: {e}") from e
    try:
        search = tuple(str(s) for s in doc.get("unqualified-search-registries", []))
        return RegistriesConf(search, tuple(_registry(r) for r in doc.get("registry", [])))
    except (TypeError, AttributeError) as e:
        raise RegistriesConfError(f"invalid registries.conf: {e}") from e


def _registry(r: dict[str, Any]) -> Registry:
    return Registry(
        prefix=str(r.get("prefix", "")),
        location=str(r.get("location", "")),
        insecure=bool(r.get("insecure", False)),
        blocked=bool(r.get("blocked", False)),
        mirror_by_digest_only=bool(r.get("mirror-by-digest-only", False)),
        mirrors=tuple(
            Mirror(
                location=str(m.get("location", "")),
                insecure=bool(m.get("insecure", False)),
                pull_from_mirror=str(m.get("pull-from-mirror", "")),
            )
            for m in r.get("mirror", [])
        ),
    )


def unsafe_change(old: bytes | None, new: bytes | None) -> str:
    """Why the change from ``old`` to ``new`` needs a drain; empty when it is safe.

    ``None`` is a config without the file (nothing configured).
    """
    try:
        before = parse_registries_conf(old) if old is not None else RegistriesConf()
        after = parse_registries_conf(new) if new is not None else RegistriesConf()
    except RegistriesConfError as e:
        return str(e)
    if after.search[: len(before.search)] != before.search:
        return "unqualified-search-registries entries removed or reordered"
    new_regs = {r.key: r for r in after.registries}
    old_regs = {r.key: r for r in before.registries}
    for key, reg in old_regs.items():
        if key not in new_regs:
            return f"registry {goquote(key)} removed"
        reason = _changed_registry(reg, new_regs[key])
        if reason:
            return reason
    for key, reg in new_regs.items():
        if key in old_regs:
            continue
        if not reg.mirrors and not reg.mirror_by_digest_only:
            return f"registry {goquote(key)} added without digest-only mirrors"
        if not all(reg.digest_only(m) for m in reg.mirrors):
            return f"registry {goquote(key)} added with mirrors not restricted to digest-only pulls"
    return ""


def _changed_registry(old: Registry, new: Registry) -> str:
    if old == new:
        return ""
    key = goquote(old.key)
    for attr in ("prefix", "location", "blocked", "insecure", "mirror_by_digest_only"):
        if getattr(old, attr) != getattr(new, attr):
            return f"registry {key}: {attr.replace('_', '-')} changed"
    new_mirrors = {m.location: m for m in new.mirrors}
    for mirror in old.mirrors:
        now = new_mirrors.get(mirror.location)
        if now is None:
            return f"registry {key}: mirror {goquote(mirror.location)} removed"
        if now.insecure != mirror.insecure:
            return f"registry {key}: mirror {goquote(mirror.location)} insecure changed"
        if now.pull_from_mirror != mirror.pull_from_mirror and not new.digest_only(now):
            return f"registry {key}: mirror {goquote(mirror.location)} pull-from-mirror changed"
    old_locations = {m.location for m in old.mirrors}
    for mirror in new.mirrors:
        if mirror.location not in old_locations and not new.digest_only(mirror):
            return f"registry {key}: mirror {goquote(mirror.location)} added for tag pulls"
    return ""
