"""Ignition's validation rules, applied to the internal form.

Each rule yields a problem naming the field and the path or unit it concerns.
The upstream daemon runs Ignition's validator plus its own mode limit before it
accepts a new config; so does mcd, before anything is written.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator

from mcd.model.dataurl import decode_data_url, decompress
from mcd.model.errors import ConfigValidationError, DecodeError
from mcd.model.ignition import MAX_FILE_MODE, Contents, IgnitionConfig, Owner
from mcd.model.ignition_parse import V2_VERSIONS
from mcd.model.text import gooctal, goquote
from mcd.model.vocabulary import SSH_KEY_PATH, dropin_path, unit_path

UNIT_SUFFIXES = frozenset(
    {
        ".service", ".socket", ".device", ".mount", ".automount", ".swap", ".target",
        ".path", ".timer", ".snapshot", ".slice", ".scope",
    }
)  # fmt: skip
HASH_ALGORITHMS = ("sha256", "sha512")
# Kernel filesystems: a file there is a kernel knob or a device, never a config file
# (``/proc/sysrq-trigger`` would reboot the node as it is "written").
KERNEL_FILESYSTEMS = ("/proc", "/sys", "/dev")
# On an ostree system /usr is a read-only bind mount; /usr/local links to /var/usrlocal.
WRITABLE_USR = "/usr/local"


def problems(cfg: IgnitionConfig, prefix: str = "") -> list[str]:
    """Every validation problem of ``cfg``; empty when it is valid."""
    return (
        list(_file_problems(cfg, prefix))
        + list(_unit_problems(cfg, prefix))
        + list(_user_problems(cfg, prefix))
    )


def check(cfg: IgnitionConfig, prefix: str = "") -> None:
    found = problems(cfg, prefix)
    if found:
        raise ConfigValidationError(found)


def path_problem(path: str) -> str | None:
    """Why ``path`` cannot be a target on the node, or None."""
    if not path.startswith("/"):
        return f"path not absolute: {goquote(path)}"
    if ".." in path.split("/"):
        return f"path contains a '..' segment: {goquote(path)}"
    if "\x00" in path:
        return f"path contains a NUL byte: {goquote(path)}"
    if path.endswith("/"):
        return f"path must name a file, not a directory: {goquote(path)}"
    top = "/" + path.split("/")[1]
    if top in KERNEL_FILESYSTEMS:
        return f"path {goquote(path)} is on the kernel filesystem {top}"
    return None


def readonly_usr_paths(cfg: IgnitionConfig) -> list[str]:
    """Targets under ``/usr`` (but ``/usr/local``): read-only on an ostree system."""
    files = cfg.files
    return [f.path for f in files if _under(f.path, "/usr") and not _under(f.path, WRITABLE_USR)]


def _under(path: str, top: str) -> bool:
    return path == top or path.startswith(top + "/")


def _field(prefix: str, rest: str) -> str:
    return f"{prefix}.{rest}" if prefix else rest


def _file_problems(cfg: IgnitionConfig, prefix: str) -> Iterator[str]:
    seen: set[str] = set()
    unit_paths = {unit_path(u.name) for u in cfg.units if u.contents or u.mask}
    unit_paths |= {dropin_path(u.name, d.name) for u in cfg.units for d in u.dropins}
    for i, file in enumerate(cfg.files):
        fld = _field(prefix, f"storage.files[{i}]")
        bad_path = path_problem(file.path)
        if bad_path:
            yield f"{fld}.path: {bad_path}"
            continue
        if file.path in seen and cfg.version not in V2_VERSIONS:
            yield f"{fld}.path: duplicate entry defined for {goquote(file.path)}"
        seen.add(file.path)
        if file.path in unit_paths:
            yield f"{fld}.path: {goquote(file.path)} conflicts with a systemd unit or dropin"
        if file.path == SSH_KEY_PATH:
            yield (
                f"{fld}.path: {goquote(file.path)} conflicts with the SSH keys of user core "
                "(set passwd.users[].sshAuthorizedKeys)"
            )
        if file.mode is not None and not 0 <= file.mode <= MAX_FILE_MODE:
            yield (
                f"{fld}.mode: invalid mode {gooctal(file.mode)} for {file.path}, "
                f"cannot exceed {gooctal(MAX_FILE_MODE)}"
            )
        if cfg.version not in V2_VERSIONS:
            # Ignition v3 File.validateOverwrite / Resource.Validate (upstream's parser)
            if file.overwrite and file.contents.source is None:
                yield f"{fld}.overwrite: overwrite must be false if source is unspecified"
            if file.contents.verification is not None and file.contents.source is None:
                yield (
                    f"{fld}.contents.verification.hash: "
                    "source must be specified if verification is specified"
                )
        yield from _owner_problems(file.user, f"{fld}.user", file.path)
        yield from _owner_problems(file.group, f"{fld}.group", file.path)
        yield from _contents_problems(file.contents, f"{fld}.contents", file.path)
        for j, extra in enumerate(file.append):
            yield from _contents_problems(extra, f"{fld}.append[{j}]", file.path)


def _owner_problems(owner: Owner, fld: str, path: str) -> Iterator[str]:
    if owner.id is not None and owner.name is not None:
        yield f"{fld}: cannot set both id and name for {goquote(path)}"
    if owner.id is not None and owner.id < 0:
        yield f"{fld}.id: negative id {owner.id} for {goquote(path)}"


def _contents_problems(contents: Contents, fld: str, path: str) -> Iterator[str]:
    try:
        fetched = b"" if contents.source is None else decode_data_url(contents.source)
        decompress(fetched, contents.compression)
    except DecodeError as e:
        yield f"{fld}: could not decode file {goquote(path)}: {e.detail}"
        return
    if contents.verification is None:
        return
    algo, _, digest = contents.verification.partition("-")
    if algo not in HASH_ALGORITHMS or not digest:
        yield f"{fld}.verification.hash: unrecognized hash {goquote(contents.verification)}"
        return
    # Ignition verifies the resource as fetched, before decompression. hashlib loads
    # OpenSSL: imported here, where a hash is checked, not by every command's start-up.
    import hashlib  # noqa: PLC0415

    if hashlib.new(algo, fetched).hexdigest() != digest.lower():
        yield f"{fld}.verification.hash: hash mismatch for {goquote(path)}"


def _unit_problems(cfg: IgnitionConfig, prefix: str) -> Iterator[str]:
    seen: set[str] = set()
    for i, unit in enumerate(cfg.units):
        fld = _field(prefix, f"systemd.units[{i}]")
        name_problem = _name_problem(unit.name, UNIT_SUFFIXES, "invalid systemd unit extension")
        if name_problem:
            yield f"{fld}.name: {name_problem}"
        if unit.name in seen:
            yield f"{fld}.name: duplicate entry defined for unit {goquote(unit.name)}"
        seen.add(unit.name)
        dropins: set[str] = set()
        for j, dropin in enumerate(unit.dropins):
            dfld = f"{fld}.dropins[{j}].name"
            problem = _name_problem(
                dropin.name, frozenset({".conf"}), "invalid systemd unit drop-in extension"
            )
            if problem:
                yield f"{dfld}: {problem} (unit {goquote(unit.name)})"
            if dropin.name in dropins:
                yield (
                    f"{dfld}: duplicate entry defined for dropin {goquote(dropin.name)} "
                    f"of unit {goquote(unit.name)}"
                )
            dropins.add(dropin.name)


def _name_problem(name: str, suffixes: frozenset[str], ext_message: str) -> str | None:
    if not name or "/" in name or "\x00" in name or name in (".", ".."):
        return f"invalid name {goquote(name)}: must be a plain file name"
    if posixpath.splitext(name)[1] not in suffixes:
        return f"{ext_message}: {goquote(name)}"
    return None


def _user_problems(cfg: IgnitionConfig, prefix: str) -> Iterator[str]:
    seen: set[str] = set()
    for i, user in enumerate(cfg.passwd.users):
        if user.name in seen:
            fld = _field(prefix, f"passwd.users[{i}].name")
            yield f"{fld}: duplicate entry defined for user {goquote(user.name)}"
        seen.add(user.name)
