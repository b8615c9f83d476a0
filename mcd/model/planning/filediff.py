"""File-level differences between two rendered configs, for people (``mcd diff``).

Files, units and dropins are compared by path; text contents get a unified
diff. Contents that look secret (pull secrets, private keys, certificates,
kubeconfigs, tokens) are reported as changed and never printed, nor is any
SSH key or password hash.
"""

from __future__ import annotations

import difflib
import fnmatch
from collections.abc import Iterator
from dataclasses import dataclass

from mcd.model.errors import DecodeError
from mcd.model.ignition.config import File, Owner
from mcd.model.machineconfig import MachineConfig
from mcd.model.text import gooctal, printable
from mcd.model.vocabulary import dropin_path, unit_path

SECRET_PATTERNS = (
    "*/config.json", "*/auth.json", "*pull-secret*", "*.key", "*.pem", "*.crt", "*.p12",
    "*/id_rsa*", "*/id_ed25519*", "*/id_ecdsa*", "*kubeconfig*", "*token*", "*secret*",
    "*password*", "*/shadow", "*/gshadow",
)  # fmt: skip
SECRET_MARKERS = (b"PRIVATE KEY", b"BEGIN CERTIFICATE", b'"auths"', b"client-key-data", b"token:")


def looks_secret(path: str, data: bytes | None, mode: int | None = None) -> bool:
    """Secret: a secret-looking name or contents, or a file that is not world-readable."""
    if mode is not None and not mode & 0o004:
        return True
    if any(fnmatch.fnmatch(path, p) for p in SECRET_PATTERNS):
        return True
    return data is not None and any(m in data for m in SECRET_MARKERS)


@dataclass(frozen=True)
class Entry:
    path: str
    status: str  # "added", "removed", "changed"
    details: tuple[str, ...]
    diff: tuple[str, ...] = ()


def _decoded(f: File | None) -> bytes | None:
    if f is None:
        return None
    try:
        return f.contents.decode()
    except DecodeError:
        return None


def _text(data: bytes | None) -> list[str] | None:
    if data is None:
        return []
    if b"\0" in data:
        return None
    try:
        return data.decode().splitlines(keepends=True)
    except UnicodeDecodeError:
        return None


def _content_diff(
    path: str, old: bytes | None, new: bytes | None, a: str, b: str, private: bool = False
) -> Entry | None:
    status = "added" if old is None else "removed" if new is None else "changed"
    if old == new:
        return None
    if private or looks_secret(path, old) or looks_secret(path, new):
        return Entry(path, status, ("secret contents changed (not shown)",))
    old_lines, new_lines = _text(old), _text(new)
    if old_lines is None or new_lines is None:
        return Entry(path, status, ("binary contents differ",))
    shown = printable(path)
    lines = difflib.unified_diff(old_lines, new_lines, f"{a}{shown}", f"{b}{shown}")
    return Entry(
        path, status, (), tuple(printable(line.rstrip("\n"), "\t") + "\n" for line in lines)
    )


def _owner(o: Owner) -> str:
    if o.name:
        return o.name
    return str(o.id) if o.id is not None else "root"


def _meta(f: File) -> tuple[str, str, str]:
    return gooctal(f.effective_mode), _owner(f.user), _owner(f.group)


def file_entries(old: MachineConfig, new: MachineConfig) -> Iterator[Entry]:
    a, b = f"a({old.name})", f"b({new.name})"
    old_files = {f.path: f for f in old.ignition.files}
    new_files = {f.path: f for f in new.ignition.files}
    for path in sorted(set(old_files) | set(new_files)):
        before, after = old_files.get(path), new_files.get(path)
        private = any(
            f is not None and looks_secret(path, None, f.effective_mode) for f in (before, after)
        )
        entry = _content_diff(path, _decoded(before), _decoded(after), a, b, private)
        meta: list[str] = []
        if before is not None and after is not None:
            for label, x, y in zip(("mode", "user", "group"), _meta(before), _meta(after),
                                   strict=True):  # fmt: skip
                if x != y:
                    meta.append(f"{label} {x} -> {y}")
        if entry is None and meta:
            entry = Entry(path, "changed", ())
        if entry is not None:
            yield Entry(entry.path, entry.status, entry.details + tuple(meta), entry.diff)


def unit_entries(old: MachineConfig, new: MachineConfig) -> Iterator[Entry]:
    a, b = f"a({old.name})", f"b({new.name})"

    def flatten(mc: MachineConfig) -> dict[str, tuple[bytes | None, str]]:
        out: dict[str, tuple[bytes | None, str]] = {}
        for u in mc.ignition.units:
            flags = f"enabled={u.enabled} mask={bool(u.mask)}"
            out[unit_path(u.name)] = (u.contents.encode() if u.contents is not None else b"", flags)
            for d in u.dropins:
                body = d.contents.encode() if d.contents is not None else b""
                out[dropin_path(u.name, d.name)] = (body, "")
        return out

    before, after = flatten(old), flatten(new)
    for path in sorted(set(before) | set(after)):
        x, y = before.get(path), after.get(path)
        entry = _content_diff(path, x[0] if x else None, y[0] if y else None, a, b)
        flags = () if not (x and y and x[1] != y[1]) else (f"{x[1]} -> {y[1]}",)
        if entry is None and flags:
            entry = Entry(path, "changed", ())
        if entry is not None:
            yield Entry(entry.path, entry.status, entry.details + flags, entry.diff)


def spec_lines(old: MachineConfig, new: MachineConfig) -> list[str]:
    lines = []
    if old.os_image_url != new.os_image_url:
        lines.append(
            f"osImageURL: {old.os_image_url or '(none)'} -> {new.os_image_url or '(none)'}"
        )
    if old.kernel_arguments != new.kernel_arguments:
        lines.append(
            f"kernelArguments: {' '.join(old.kernel_arguments) or '(none)'} -> "
            f"{' '.join(new.kernel_arguments) or '(none)'}"
        )
    pairs: tuple[tuple[str, object, object], ...] = (
        ("kernelType", old.kernel_type, new.kernel_type),
        ("fips", old.fips, new.fips),
        ("extensions", sorted(old.extensions), sorted(new.extensions)),
    )
    for label, x, y in pairs:
        if x != y:
            lines.append(f"{label}: {x} -> {y}")
    old_users = {u.name: u for u in old.ignition.passwd.users}
    new_users = {u.name: u for u in new.ignition.passwd.users}
    for name in sorted(set(old_users) | set(new_users)):
        u, v = old_users.get(name), new_users.get(name)
        keys_u = set(u.ssh_authorized_keys) if u else set()
        keys_v = set(v.ssh_authorized_keys) if v else set()
        if keys_u != keys_v:
            lines.append(
                f"user {name}: SSH keys changed ({len(keys_v - keys_u)} added, "
                f"{len(keys_u - keys_v)} removed; keys not shown)"
            )
        if (u.password_hash if u else None) != (v.password_hash if v else None):
            lines.append(f"user {name}: password hash changed (not shown)")
    return lines


def render_diff(old: MachineConfig, new: MachineConfig) -> tuple[str, bool]:
    """The text of ``mcd diff`` and whether anything differs."""
    out: list[str] = []
    for line in spec_lines(old, new):
        out.append(f"~ {line}\n")
    for entry in [*file_entries(old, new), *unit_entries(old, new)]:
        sign = {"added": "+", "removed": "-", "changed": "~"}[entry.status]
        notes = f" ({'; '.join(entry.details)})" if entry.details else ""
        out.append(f"{sign} {printable(entry.path)}: {entry.status}{notes}\n")
        out.extend(entry.diff)
    return "".join(out), bool(out)
