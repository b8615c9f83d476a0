"""Ignition's validation rules, applied to the internal form.

Each rule yields a problem naming the field and the path or unit it concerns.
The upstream daemon runs Ignition's validator plus its own mode limit before it
accepts a new config; so does mcd, before anything is written.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator

from mcd.model.errors import ConfigValidationError, DecodeError
from mcd.model.ignition import storage
from mcd.model.ignition.config import MAX_FILE_MODE, Contents, IgnitionConfig, Owner
from mcd.model.ignition.dataurl import MAX_DECOMPRESSED, decode_data_url, decoded_size
from mcd.model.ignition.guards import UNIT_SUFFIXES, file_guard, length_problem, on_readonly_usr
from mcd.model.ignition.guards import spelling_problem as path_spelling_problem
from mcd.model.ignition.parse import V2_VERSIONS
from mcd.model.ignition.values import control_problem, text_problem
from mcd.model.text import gooctal, goquote, printable
from mcd.model.vocabulary import dropin_path, unit_path

HASH_ALGORITHMS = ("sha256", "sha512")
MAX_ID = 2**32 - 2
"""uid/gid range: 2^32-1 is ``(uid_t)-1``, "no change" to ``chown``."""
MAX_TOTAL_DECODED = MAX_DECOMPRESSED
"""All files' decoded contents together (a config's files are held in memory while they
are written, so this bounds the memory of an update)."""


def problems(cfg: IgnitionConfig, prefix: str = "") -> list[str]:
    """Every validation problem of ``cfg``; empty when it is valid. Worked out once per
    config and prefix (a plan validates both configs, its gate the new one again, and the
    next update's old config is this update's new one)."""
    key = f"problems:{prefix}"
    found = cfg.memo.get(key)
    if found is None:
        found = (
            list(_file_problems(cfg, prefix))
            + list(_unit_problems(cfg, prefix))
            + list(_user_problems(cfg, prefix))
            + list(storage.problems(cfg, prefix))
        )
        cfg.memo[key] = found
    return list(found)


def special_mode_problems(cfg: IgnitionConfig, prefix: str = "") -> list[str]:
    """The problems of :func:`problems` that Ignition's own parser accepts: a mode with the
    setuid, setgid or sticky bit (upstream ``ValidateIgnition``, a reconcilability check)."""
    return [
        f"{_field(prefix, f'storage.files[{i}]')}.mode: invalid mode {gooctal(f.mode)} for "
        f"{printable(f.path)}, cannot exceed {gooctal(MAX_FILE_MODE)}"
        for i, f in enumerate(cfg.files)
        if f.mode is not None and MAX_FILE_MODE < f.mode <= 0o7777
    ]


def check(cfg: IgnitionConfig, prefix: str = "") -> None:
    found = problems(cfg, prefix)
    if found:
        raise ConfigValidationError(found)


def path_problem(path: str) -> str | None:
    """Why ``path`` cannot be a target on the node as written, or None."""
    return path_spelling_problem(path) or file_guard(path, force_file=False)


def readonly_usr_paths(cfg: IgnitionConfig) -> list[str]:
    """Targets under ``/usr`` (but ``/usr/local``): read-only on an ostree system."""
    return [f.path for f in cfg.files if on_readonly_usr(f.path)]


def _field(prefix: str, rest: str) -> str:
    return f"{prefix}.{rest}" if prefix else rest


def _file_problems(cfg: IgnitionConfig, prefix: str) -> Iterator[str]:
    seen: set[str] = set()
    unit_paths = {unit_path(u.name) for u in cfg.units if u.contents or u.mask}
    unit_paths |= {dropin_path(u.name, d.name) for u in cfg.units for d in u.dropins}
    budget = [MAX_TOTAL_DECODED]
    for i, file in enumerate(cfg.files):
        fld = _field(prefix, f"storage.files[{i}]")
        bad_path = path_problem(file.path) or length_problem(file.path)
        if bad_path:
            yield f"{fld}.path: {bad_path}"
            continue
        if file.path in seen and cfg.version not in V2_VERSIONS:
            yield f"{fld}.path: duplicate entry defined for {goquote(file.path)}"
        seen.add(file.path)
        if file.path in unit_paths:
            yield f"{fld}.path: {goquote(file.path)} conflicts with a systemd unit or dropin"
        if file.mode is not None and not 0 <= file.mode <= MAX_FILE_MODE:
            yield (
                f"{fld}.mode: invalid mode {gooctal(file.mode)} for {printable(file.path)}, "
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
        yield from _contents_problems(file.contents, f"{fld}.contents", file.path, budget)
        for j, extra in enumerate(file.append):
            yield from _contents_problems(extra, f"{fld}.append[{j}]", file.path, budget)


def _owner_problems(owner: Owner, fld: str, path: str) -> Iterator[str]:
    if owner.id is not None and owner.name is not None:
        yield f"{fld}: cannot set both id and name for {goquote(path)}"
    if owner.id is not None and owner.id < 0:
        yield f"{fld}.id: negative id {owner.id} for {goquote(path)}"
    elif owner.id is not None and owner.id > MAX_ID:
        yield f"{fld}.id: id {owner.id} out of range 0..{MAX_ID} for {goquote(path)}"
    if owner.name is not None:
        bad = control_problem(owner.name)
        if bad:
            yield f"{fld}.name: {bad} for {goquote(path)}"


def _contents_problems(contents: Contents, fld: str, path: str, budget: list[int]) -> Iterator[str]:
    """Decode (streamed: the inflated bytes are counted, never kept) and verify one
    contents; ``budget`` is what is left of :data:`MAX_TOTAL_DECODED`."""
    try:
        fetched = b"" if contents.source is None else decode_data_url(contents.source)
        size = decoded_size(fetched, contents.compression, MAX_DECOMPRESSED)
    except DecodeError as e:
        yield f"{fld}: could not decode file {goquote(path)}: {e.detail}"
        return
    budget[0] -= size
    if budget[0] < 0:
        yield (
            f"{fld}: could not decode file {goquote(path)}: the files' decoded contents "
            f"together pass {MAX_TOTAL_DECODED} bytes"
        )
        budget[0] = 2**62  # said once
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
        else:
            too_long = length_problem(unit_path(unit.name))
            if too_long:
                yield f"{fld}.name: {too_long}"
        if unit.contents is not None:
            bad_text = text_problem(unit.contents)
            if bad_text:
                yield f"{fld}.contents: unit {goquote(unit.name)}: {bad_text}"
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
            elif not name_problem:
                too_long = length_problem(dropin_path(unit.name, dropin.name))
                if too_long:
                    yield f"{dfld}: {too_long} (unit {goquote(unit.name)})"
            if dropin.contents is not None:
                bad_text = text_problem(dropin.contents)
                if bad_text:
                    yield (
                        f"{fld}.dropins[{j}].contents: dropin {goquote(dropin.name)} of unit "
                        f"{goquote(unit.name)}: {bad_text}"
                    )
            if dropin.name in dropins:
                yield (
                    f"{dfld}: duplicate entry defined for dropin {goquote(dropin.name)} "
                    f"of unit {goquote(unit.name)}"
                )
            dropins.add(dropin.name)


def _name_problem(name: str, suffixes: frozenset[str], ext_message: str) -> str | None:
    if not name or "/" in name or name in (".", ".."):
        return f"invalid name {goquote(name)}: must be a plain file name"
    bad = control_problem(name)
    if bad:
        return f"invalid name {goquote(name)}: {bad}"
    if posixpath.splitext(name)[1] not in suffixes:
        return f"{ext_message}: {goquote(name)}"
    return None


def _user_problems(cfg: IgnitionConfig, prefix: str) -> Iterator[str]:
    seen: set[str] = set()
    for i, user in enumerate(cfg.passwd.users):
        fld = _field(prefix, f"passwd.users[{i}]")
        bad = control_problem(user.name) or ("contains ':'" if ":" in user.name else None)
        if bad:
            yield f"{fld}.name: invalid user name {goquote(user.name)}: {bad}"
        if user.name in seen:
            yield f"{fld}.name: duplicate entry defined for user {goquote(user.name)}"
        seen.add(user.name)
        if user.password_hash is not None:
            bad = control_problem(user.password_hash) or (
                "contains ':'" if ":" in user.password_hash else None
            )
            if bad:  # never quoted: it is a secret
                who = goquote(user.name)
                yield f"{fld}.passwordHash: invalid password hash for user {who}: {bad}"
        keys: dict[str, int] = {}
        for k, key in enumerate(user.ssh_authorized_keys):
            if control_problem(key.rstrip("\n")):
                yield f"{fld}.sshAuthorizedKeys[{k}]: an SSH key contains a control character"
            if key in keys:
                # Ignition v3's validate.ValidateDups (ErrDuplicate), run by upstream's
                # ign3.Parse; a spec 2.2 list was deduplicated when parsed (upstream's
                # dedupePasswdUserSSHKeys). The key itself is never quoted.
                yield (
                    f"{fld}.sshAuthorizedKeys[{k}]: duplicate entry defined "
                    f"(the same key as sshAuthorizedKeys[{keys[key]}])"
                )
            keys.setdefault(key, k)
