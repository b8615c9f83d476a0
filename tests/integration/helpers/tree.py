"""The whole of a root, for comparing it byte for byte before and after: every path with its
type, mode, owner, link target and contents (a digest)."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

Entry = tuple[str, str, int, int, int, str]
"""(path, kind, mode, uid, gid, link target or sha256 of the contents)"""


WRITER_LOCK = "run/machine-config-daemon.lock"
"""Rewritten by every writer (who holds it, since when): not part of the node's state."""


def snapshot(root: Path, skip: tuple[str, ...] = (WRITER_LOCK,)) -> dict[str, Entry]:
    """Every path under ``root`` (not following symlinks), except those under ``skip``."""
    out: dict[str, Entry] = {}
    for here, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            path = os.path.join(here, name)
            rel = os.path.relpath(path, root)
            if any(rel == s or rel.startswith(s + "/") for s in skip):
                continue
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                kind, what = "link", os.readlink(path)
            elif stat.S_ISDIR(st.st_mode):
                kind, what = "dir", ""
            elif stat.S_ISREG(st.st_mode):
                kind, what = "file", hashlib.sha256(Path(path).read_bytes()).hexdigest()
            else:
                kind, what = "other", ""
            out[rel] = (rel, kind, stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid, what)
    return out


def differences(before: dict[str, Entry], after: dict[str, Entry]) -> list[str]:
    """What changed, one line a path (empty when nothing did)."""
    lines = [f"left behind: {after[p][:2]}" for p in sorted(after.keys() - before.keys())]
    lines += [f"gone: {before[p][:2]}" for p in sorted(before.keys() - after.keys())]
    lines += [
        f"changed: {before[p]} -> {after[p]}"
        for p in sorted(before.keys() & after.keys())
        if before[p] != after[p]
    ]
    return lines
