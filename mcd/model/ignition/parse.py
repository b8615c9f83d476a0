"""Parse Ignition spec 2.2 and 3.0-3.5 documents into the internal form.

Structural problems (wrong types, unknown version) raise ``ConfigParseError``
naming the field. Semantic rules (absolute paths, modes, unit names) are checked
afterwards by ``mcd.model.ignition.validate`` so that every problem can be reported at once.
"""

from __future__ import annotations

from typing import Any

from mcd.model import fields as f
from mcd.model.errors import ConfigParseError, UnsupportedVersionError
from mcd.model.ignition.config import (
    Contents,
    Dropin,
    File,
    FixedSections,
    IgnitionConfig,
    Owner,
    Passwd,
    Unit,
    User,
)
from mcd.model.text import goquote

V2_VERSIONS = ("2.2.0",)
V3_VERSIONS = ("3.0.0", "3.1.0", "3.2.0", "3.3.0", "3.4.0", "3.5.0")
SUPPORTED_VERSIONS = V2_VERSIONS + V3_VERSIONS
LATEST_VERSION = V3_VERSIONS[-1]

_USER_KEYS = frozenset({"name", "passwordHash", "sshAuthorizedKeys"})


def empty_config() -> IgnitionConfig:
    return IgnitionConfig(version=LATEST_VERSION)


def parse_ignition(doc: object, path: str = "") -> IgnitionConfig:
    """Convert a decoded Ignition document to the internal form.

    ``path`` is the location of the document inside its container
    (``spec.config`` for a MachineConfig), used in error messages.
    """
    obj = f.as_map(doc, path)
    if not obj:
        return empty_config()
    ign = f.opt_map(obj, "ignition", path)
    version = f.opt_str(ign, "version", f.join(path, "ignition"))
    vpath = f.join(f.join(path, "ignition"), "version")
    if not version:
        raise UnsupportedVersionError("missing Ignition spec version", vpath)
    if version not in SUPPORTED_VERSIONS:
        raise UnsupportedVersionError(
            f"unsupported Ignition spec version {goquote(version)}; "
            f"supported: {', '.join(SUPPORTED_VERSIONS)}",
            vpath,
        )
    v2 = version in V2_VERSIONS
    if v2:
        _reject_v2_networkd(obj, path)
    storage = f.opt_map(obj, "storage", path)
    spath = f.join(path, "storage")
    files = _parse_files(storage, spath, v2)
    systemd = f.opt_map(obj, "systemd", path)
    units = tuple(
        _parse_unit(u, f.join(f.join(f.join(path, "systemd"), "units"), i))
        for i, u in enumerate(f.opt_list(systemd, "units", f.join(path, "systemd")))
    )
    return IgnitionConfig(
        version=version,
        files=files,
        units=units,
        passwd=_parse_passwd(f.opt_map(obj, "passwd", path), f.join(path, "passwd"), v2),
        fixed=_parse_fixed(obj, storage, path, v2),
    )


def _reject_v2_networkd(obj: f.JSONMap, path: str) -> None:
    networkd = f.opt_map(obj, "networkd", path)
    if f.opt_list(networkd, "units", f.join(path, "networkd")):
        raise ConfigParseError(
            "the networkd section is not supported; use systemd units or files",
            f.join(f.join(path, "networkd"), "units"),
        )


def _parse_files(storage: f.JSONMap, spath: str, v2: bool) -> tuple[File, ...]:
    parsed = [
        _parse_file(item, f.join(f.join(spath, "files"), i), v2)
        for i, item in enumerate(f.opt_list(storage, "files", spath))
    ]
    if not v2:
        return tuple(parsed)
    # Spec 2.2 allows the same path twice; the later entry wins (upstream checkV2Files).
    last: dict[str, File] = {}
    for file in parsed:
        last.pop(file.path, None)
        last[file.path] = file
    return tuple(last.values())


def _parse_owner(obj: f.JSONMap, key: str, path: str) -> Owner:
    o = f.opt_map(obj, key, path)
    p = f.join(path, key)
    return Owner(id=f.opt_int(o, "id", p), name=f.opt_str(o, "name", p) or None)


def _parse_contents(obj: f.JSONMap, path: str) -> Contents:
    verification = f.opt_map(obj, "verification", path)
    return Contents(
        source=f.opt_str(obj, "source", path),
        compression=f.opt_str(obj, "compression", path) or "",
        verification=f.opt_str(verification, "hash", f.join(path, "verification")) or None,
    )


def _parse_file(item: object, path: str, v2: bool) -> File:
    obj = f.as_map(item, path)
    fpath = f.opt_str(obj, "path", path)
    if fpath is None:
        raise ConfigParseError("missing path", path)
    contents = _parse_contents(f.opt_map(obj, "contents", path), f.join(path, "contents"))
    append: tuple[Contents, ...]
    if v2:
        fs = f.opt_str(obj, "filesystem", path)
        if fs not in (None, "", "root"):
            raise ConfigParseError(
                f'file {goquote(fpath)} targets filesystem {goquote(fs or "")}; only "root" '
                "is supported",
                f.join(path, "filesystem"),
            )
        if f.opt_bool(obj, "append", path):
            append, contents = (contents,), Contents()
        else:
            append = ()
    else:
        append = tuple(
            _parse_contents(
                f.as_map(a, f.join(f.join(path, "append"), i)), f.join(f.join(path, "append"), i)
            )
            for i, a in enumerate(f.opt_list(obj, "append", path))
        )
    return File(
        path=fpath,
        contents=contents,
        mode=f.opt_int(obj, "mode", path),
        user=_parse_owner(obj, "user", path),
        group=_parse_owner(obj, "group", path),
        overwrite=f.opt_bool(obj, "overwrite", path),
        append=append,
    )


def _parse_unit(item: object, path: str) -> Unit:
    obj = f.as_map(item, path)
    name = f.opt_str(obj, "name", path)
    if name is None:
        raise ConfigParseError("missing name", path)
    dropins = []
    for i, d in enumerate(f.opt_list(obj, "dropins", path)):
        dpath = f.join(f.join(path, "dropins"), i)
        dobj = f.as_map(d, dpath)
        dname = f.opt_str(dobj, "name", dpath)
        if dname is None:
            raise ConfigParseError("missing name", dpath)
        dropins.append(Dropin(name=dname, contents=f.opt_str(dobj, "contents", dpath)))
    return Unit(
        name=name,
        contents=f.opt_str(obj, "contents", path),
        enabled=_parse_enabled(obj, path),
        mask=f.opt_bool(obj, "mask", path),
        dropins=tuple(dropins),
    )


def _parse_enabled(obj: f.JSONMap, path: str) -> bool | None:
    enabled = f.opt_bool(obj, "enabled", path)
    # Spec 2.x also had the deprecated "enable: true".
    if enabled is None and f.opt_bool(obj, "enable", path):
        return True
    return enabled


def _ssh_keys(uobj: f.JSONMap, path: str, v2: bool) -> tuple[str, ...]:
    """A user's keys; spec 2.2's deduplicated in order, as upstream's ``ParseAndConvertConfig``
    does (``dedupePasswdUserSSHKeys``); a spec 3 list keeps its duplicates for the gate
    to refuse (Ignition's ``duplicate entry defined``)."""
    keys = f.str_list(uobj, "sshAuthorizedKeys", path)
    return tuple(dict.fromkeys(keys)) if v2 else keys


def _parse_passwd(obj: f.JSONMap, path: str, v2: bool) -> Passwd:
    users = []
    for i, u in enumerate(f.opt_list(obj, "users", path)):
        upath = f.join(f.join(path, "users"), i)
        uobj = f.as_map(u, upath)
        name = f.opt_str(uobj, "name", upath)
        if not name:
            raise ConfigParseError("missing name", upath)
        other = tuple(
            sorted(
                (k, f.canonical(v))
                for k, v in uobj.items()
                if k not in _USER_KEYS and not f.is_empty(v)
            )
        )
        users.append(
            User(
                name=name,
                password_hash=f.opt_str(uobj, "passwordHash", upath) or None,
                ssh_authorized_keys=_ssh_keys(uobj, upath, v2),
                other=other,
            )
        )
    return Passwd(users=tuple(users), groups=f.canonical(f.opt_list(obj, "groups", path)))


def _parse_fixed(obj: f.JSONMap, storage: f.JSONMap, path: str, v2: bool) -> FixedSections:
    spath = f.join(path, "storage")

    def section(key: str) -> str:
        items: list[Any] = f.opt_list(storage, key, spath)
        if v2 and key in ("directories", "links"):
            items = [
                {k: v for k, v in f.as_map(x, spath).items() if k != "filesystem"} for x in items
            ]
        return f.canonical(items)

    kargs = f.opt_map(obj, "kernelArguments", path)
    return FixedSections(
        disks=section("disks"),
        raid=section("raid"),
        filesystems=section("filesystems"),
        directories=section("directories"),
        links=section("links"),
        luks=section("luks"),
        kernel_arguments=f.canonical({k: v for k, v in kargs.items() if not f.is_empty(v)}),
    )
