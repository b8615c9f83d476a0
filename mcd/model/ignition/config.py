"""The internal form of an Ignition config: one shape for spec 2.2 and 3.0-3.5.

Everything is a frozen dataclass, so two configs compare with ``==`` the way the
upstream daemon compares its converted Ignition structs with ``reflect.DeepEqual``.
Sections mcd never applies (disks, raid, filesystems, directories, links, luks,
Ignition kernelArguments, passwd groups) are kept as canonical JSON text: only
their equality matters, because a change in them is unreconcilable.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from mcd.model.errors import DecodeError
from mcd.model.ignition.dataurl import decode_data_url, decompress
from mcd.model.text import goquote

DEFAULT_FILE_MODE = 0o644
MAX_FILE_MODE = 0o777
DECODED_KEPT = 64 * 1024 * 1024
"""Bytes of decoded contents one :func:`decoding_once` scope keeps, at most."""


class _Decoded:
    """Decoded contents by their :class:`Contents` (source, compression, verification):
    equal keys decode to equal bytes, so a hit is never stale. Errors are not kept."""

    def __init__(self, limit: int) -> None:
        self.data: dict[Contents, bytes] = {}
        self.left = limit

    def keep(self, contents: Contents, data: bytes) -> None:
        if len(data) <= self.left:
            self.data[contents] = data
            self.left -= len(data)


_SCOPE: ContextVar[_Decoded | None] = ContextVar("mcd_decoded", default=None)


@contextmanager
def decoding_once(limit: int = DECODED_KEPT) -> Iterator[None]:
    """Within this block (in this thread), each distinct contents is decoded once: an update
    checks, writes and re-checks the same files, and each check would decode them again.
    The kept bytes go with the block (nothing outlives one update); a nested block shares
    the outer one's."""
    if _SCOPE.get() is not None:
        yield
        return
    token = _SCOPE.set(_Decoded(limit))
    try:
        yield
    finally:
        _SCOPE.reset(token)


@dataclass(frozen=True)
class Owner:
    """A file's user or group: by numeric id, by name (looked up in the root), or unset (root)."""

    id: int | None = None
    name: str | None = None


@dataclass(frozen=True)
class Contents:
    source: str | None = None
    compression: str = ""
    verification: str | None = None

    def decode(self) -> bytes:
        """The bytes this resource stands for (an absent source is an empty file); within
        :func:`decoding_once`, decoded once."""
        if self.source is None:
            return b""
        kept = _SCOPE.get()
        if kept is not None and (hit := kept.data.get(self)) is not None:
            return hit
        data = decompress(decode_data_url(self.source), self.compression)
        if kept is not None:
            kept.keep(self, data)
        return data


@dataclass(frozen=True)
class File:
    path: str
    contents: Contents = Contents()
    mode: int | None = None
    user: Owner = Owner()
    group: Owner = Owner()
    overwrite: bool | None = None
    append: tuple[Contents, ...] = ()

    @property
    def effective_mode(self) -> int:
        return DEFAULT_FILE_MODE if self.mode is None else self.mode

    def data(self) -> bytes:
        """Decoded contents; ``DecodeError`` messages use the upstream wording."""
        try:
            return self.contents.decode()
        except DecodeError as e:
            raise DecodeError(f"could not decode file {goquote(self.path)}: {e.detail}") from e


@dataclass(frozen=True)
class Dropin:
    name: str
    contents: str | None = None


@dataclass(frozen=True)
class Unit:
    name: str
    contents: str | None = None
    enabled: bool | None = None
    mask: bool | None = None
    dropins: tuple[Dropin, ...] = ()


@dataclass(frozen=True)
class User:
    name: str
    password_hash: str | None = None
    ssh_authorized_keys: tuple[str, ...] = ()
    other: tuple[tuple[str, str], ...] = ()
    """Every other non-empty user field, as sorted (key, canonical JSON) pairs."""


@dataclass(frozen=True)
class Passwd:
    users: tuple[User, ...] = ()
    groups: str = "[]"


@dataclass(frozen=True)
class FixedSections:
    """Sections the daemon must never change on a running node (canonical JSON)."""

    disks: str = "[]"
    raid: str = "[]"
    filesystems: str = "[]"
    directories: str = "[]"
    links: str = "[]"
    luks: str = "[]"
    kernel_arguments: str = "{}"


@dataclass(frozen=True)
class IgnitionConfig:
    version: str = "3.5.0"
    files: tuple[File, ...] = ()
    units: tuple[Unit, ...] = ()
    passwd: Passwd = Passwd()
    fixed: FixedSections = FixedSections()
    file_index: dict[str, File] = field(default_factory=dict, compare=False, repr=False)
    memo: dict[str, list[str]] = field(default_factory=dict, init=False, compare=False, repr=False)
    """Results of pure functions of this (immutable) config, by name: its validation
    problems (:func:`mcd.model.ignition.validate.problems`), computed once however often asked."""

    def __post_init__(self) -> None:
        # Later entries win, as in the upstream v2 on-disk check.
        object.__setattr__(self, "file_index", {f.path: f for f in self.files})

    def file(self, path: str) -> File | None:
        return self.file_index.get(path)

    def is_dropin_path(self, path: str) -> bool:
        """Is ``path`` a dropin this config defines (``/etc/systemd/system/<unit>.d/<name>``)?

        Upstream ``isPathInDropins``: a stale file replaced by such a dropin is kept.
        """
        prefix = "/etc/systemd/system/"
        if not path.startswith(prefix):
            return False
        unit_dir, _, name = path[len(prefix) :].partition("/")
        if not unit_dir.endswith(".d") or not name or "/" in name:
            return False
        unit = self.unit(unit_dir[: -len(".d")])
        return unit is not None and any(d.name == name for d in unit.dropins)

    def unit(self, name: str) -> Unit | None:
        for u in self.units:
            if u.name == name:
                return u
        return None
