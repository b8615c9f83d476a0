"""Is a ``registries.conf`` change safe to apply without draining?

Mirrors upstream ``isSafeContainerRegistryConfChanges`` (``pkg/daemon/drain.go``)
rule for rule, including its blind spots, so a node drains exactly when the Go
daemon would:

- the file is decoded from its ``data:`` URL only (``GetIgnitionFileDataByPath``
  does not gunzip), then decoded as TOML into ``sysregistriesv2.V2RegistriesConf``:
  a value of the wrong type is an error, as in BurntSushi/toml;
- search registries may only be appended;
- registries are keyed by ``prefix`` (else ``location``); none may disappear;
- a changed registry may not change ``prefix``, ``location``, ``blocked`` or
  ``insecure`` (``mirror-by-digest-only`` and a mirror's ``insecure`` are not
  checked upstream), may not drop a mirror, may only change a mirror's
  ``pull-from-mirror`` to ``digest-only``, and may only add a mirror that has
  ``pull-from-mirror = "digest-only"`` or sits in a ``mirror-by-digest-only``
  registry;
- a new registry is safe when every mirror has ``pull-from-mirror = "digest-only"``
  (``allDigestOnlyMirror``: the registry's own ``mirror-by-digest-only`` counts
  only when it has no mirror at all).

An unparseable file is an error, never "unsafe": upstream fails the update.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcd.model.errors import ConfigError
from mcd.model.vocabulary import REGISTRIES_CONF

DIGEST_ONLY = "digest-only"


@dataclass(frozen=True)
class Mirror:
    location: str = ""
    insecure: bool = False
    pull_from_mirror: str = ""


@dataclass(frozen=True)
class Registry:
    prefix: str = ""
    location: str = ""
    insecure: bool = False
    pull_from_mirror: str = ""
    blocked: bool = False
    mirror_by_digest_only: bool = False
    mirrors: tuple[Mirror, ...] = ()

    @property
    def scope(self) -> str:
        return self.prefix or self.location


@dataclass(frozen=True)
class RegistriesConf:
    search: tuple[str, ...] = ()
    registries: tuple[Registry, ...] = ()


class RegistriesConfError(ConfigError):
    """``registries.conf`` cannot be decoded; the update fails, as upstream."""


_TYPE_NAMES = {bool: "boolean", str: "string", list: "slice", dict: "struct"}


def parse_registries_conf(data: bytes) -> RegistriesConf:
    """Decode the V2 TOML format as BurntSushi/toml into ``V2RegistriesConf`` would."""
    import tomllib  # noqa: PLC0415  (read only when a plan meets a registries.conf)

    try:
        doc = tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise _decode_error(f"invalid UTF-8 at byte {e.start}") from e
    except tomllib.TOMLDecodeError as e:
        raise _decode_error(str(e)) from e
    search = _typed(doc, "unqualified-search-registries", list, [])
    for i, item in enumerate(search):
        _check(item, str, f"unqualified-search-registries[{i}]")
    for key, kind in (
        ("credential-helpers", list),
        ("short-name-mode", str),
        ("aliases", dict),
        ("additional-layer-store-auth-helper", str),
    ):
        _typed(doc, key, kind, None)
    regs = _typed(doc, "registry", list, [])
    return RegistriesConf(
        tuple(str(s) for s in search),
        tuple(_registry(r, f"registry[{i}]") for i, r in enumerate(regs)),
    )


def _decode_error(detail: str) -> RegistriesConfError:
    return RegistriesConfError(
        f"failed decoding TOML content from file {REGISTRIES_CONF}: {detail}"
    )


def _check(value: object, kind: type, key: str) -> None:
    if not isinstance(value, kind):
        have = _TYPE_NAMES.get(type(value), type(value).__name__)
        raise _decode_error(
            f"(last key {key!r}): incompatible types: TOML value has type {have}; "
            f"destination has type {_TYPE_NAMES[kind]}"
        )


def _typed(obj: dict[str, Any], key: str, kind: type, default: Any) -> Any:
    if key not in obj:
        return default
    _check(obj[key], kind, key)
    return obj[key]


def _registry(r: object, where: str) -> Registry:
    _check(r, dict, where)
    assert isinstance(r, dict)
    mirrors = _typed(r, "mirror", list, [])
    return Registry(
        prefix=_typed(r, "prefix", str, ""),
        location=_typed(r, "location", str, ""),
        insecure=_typed(r, "insecure", bool, False),
        pull_from_mirror=_typed(r, "pull-from-mirror", str, ""),
        blocked=_typed(r, "blocked", bool, False),
        mirror_by_digest_only=_typed(r, "mirror-by-digest-only", bool, False),
        mirrors=tuple(_mirror(m, f"{where}.mirror[{i}]") for i, m in enumerate(mirrors)),
    )


def _mirror(m: object, where: str) -> Mirror:
    _check(m, dict, where)
    assert isinstance(m, dict)
    return Mirror(
        location=_typed(m, "location", str, ""),
        insecure=_typed(m, "insecure", bool, False),
        pull_from_mirror=_typed(m, "pull-from-mirror", str, ""),
    )


def unsafe_change(old: bytes | None, new: bytes | None) -> str:
    """Why the change from ``old`` to ``new`` needs a drain; empty when it is safe.

    ``None`` is a config without the file (an empty ``V2RegistriesConf``). The
    reasons are upstream's log lines. ``RegistriesConfError`` when either side
    cannot be decoded.
    """
    before = parse_registries_conf(old or b"")
    after = parse_registries_conf(new or b"")
    path = REGISTRIES_CONF
    if len(before.search) > len(after.search) or after.search[: len(before.search)] != (
        before.search
    ):
        return f"{path}: unqualified-search-registries entries removed or reordered"
    old_regs: dict[str, Registry] = {}
    for reg in before.registries:
        old_regs[reg.scope] = reg
    new_regs: dict[str, Registry] = {}
    for reg in after.registries:
        new_regs[reg.scope] = reg
    for scope in old_regs:
        if scope not in new_regs:
            return f"{path}: registry {scope} has been removed"
    for scope, new_reg in new_regs.items():
        old_reg = old_regs.get(scope)
        if old_reg is None:
            if not _all_digest_only_mirror(new_reg):
                return (
                    f"{path}: registry {scope} has been added with mirror does not set "
                    "pull-from-mirror=digest-only"
                )
        elif old_reg != new_reg:
            reason = _changed_registry(scope, old_reg, new_reg)
            if reason:
                return reason
    return ""


def _changed_registry(scope: str, old: Registry, new: Registry) -> str:
    path = REGISTRIES_CONF
    for attr, fmt in (("prefix", "s"), ("location", "s"), ("blocked", "t"), ("insecure", "t")):
        was, now = getattr(old, attr), getattr(new, attr)
        if was != now:
            shown = (str(was).lower(), str(now).lower()) if fmt == "t" else (was, now)
            return (
                f"{path}: {attr} value for registry {scope} has changed "
                f"from {shown[0]} to {shown[1]}"
            )
    for mirror in old.mirrors:
        if _find(mirror.location, new.mirrors) is None:
            return f"{path}: mirror {mirror.location} has been removed in registry {scope}"
    for mirror in new.mirrors:
        before = _find(mirror.location, old.mirrors)
        if before is not None:
            if mirror.pull_from_mirror not in (before.pull_from_mirror, DIGEST_ONLY):
                return (
                    f"{path}: pull-from-mirror value for mirror {mirror.location} has changed "
                    f"from {before.pull_from_mirror} to {mirror.pull_from_mirror} "
                )
        elif mirror.pull_from_mirror != DIGEST_ONLY and not new.mirror_by_digest_only:
            return (
                f"{path}: mirror {mirror.location} has been added in registry {scope} "
                f"that has pull-from-mirror set to {mirror.pull_from_mirror} "
            )
    return ""


def _find(location: str, mirrors: tuple[Mirror, ...]) -> Mirror | None:
    """Upstream ``searchRegistryMirror``: the first mirror at ``location``."""
    for mirror in mirrors:
        if mirror.location == location:
            return mirror
    return None


def _all_digest_only_mirror(reg: Registry) -> bool:
    """Upstream ``allDigestOnlyMirror``."""
    if not reg.mirrors:
        return reg.mirror_by_digest_only
    return all(m.pull_from_mirror == DIGEST_ONLY for m in reg.mirrors)
