"""The exact undo of an update: what each path it touches was before, put back by its rollback.

The update's own undo steps rewrite the old config the way upstream would (files, units,
enablement through systemd, stale-data removal with its backups). That leaves traces a
rollback should not: a file of the OS the new config took over and upstream's ``noorig``
rule deletes, a backup stamp, an enablement link a preset made, a dropin directory, the
parent directories of new files. So before the first change the update records, durably
beside its journal, the state of every path it may touch (:func:`record`): each target and
its two backup names (absent, a file, copied, or a symlink's target), the directories
missing above them, and every symlink and directory under ``/etc/systemd/system``. At the
end of a rollback :func:`restore` puts exactly that back, whatever order the steps failed in;
the journal's clear removes the record (:data:`RECORD`, :data:`PREIMAGES`).

Every path is resolved inside the root (:mod:`mcd.host.fs.fsops`); nothing is followed out of
it. The record holds no file contents (those are copies, root-only, like the journal's).
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import json
import logging
import os
import shutil
import stat
import threading
from typing import Any

from mcd.host.errors import HostError
from mcd.host.fs import fsops
from mcd.host.fs.backups import noorig_path, orig_path
from mcd.host.fs.sealing import STATE_DIR_MODE, STATE_FILE_MODE
from mcd.host.rootfs import Root
from mcd.model.ignition.guards import UNDO_PREIMAGES, UNDO_RECORD
from mcd.model.text import goquote

log = logging.getLogger(__name__)

RECORD = UNDO_RECORD
PREIMAGES = UNDO_PREIMAGES
UNIT_DIR = "/etc/systemd/system"


def record(root: Root, paths: list[str]) -> None:
    """Record the state of ``paths`` (with their backup names) and of the unit directory."""
    entries: dict[str, dict[str, str]] = {}
    created: list[str] = []
    synced: set[str] = set()  # the preimages' directories: made durable once, at the end
    _remove_asides(root)
    fsops.ensure_dir(root, os.path.dirname(PREIMAGES), STATE_DIR_MODE)  # as the journal's
    fsops.ensure_dir(root, PREIMAGES, 0o700)  # copies of private files: root alone
    for path in dict.fromkeys(p for t in paths for p in (t, orig_path(t), noorig_path(t))):
        host = fsops.target_path(root, path)
        try:
            st = os.lstat(host)
        except (FileNotFoundError, NotADirectoryError):
            entries[path] = {"kind": "absent"}
            created += _missing_parents(root, host)
            continue
        if stat.S_ISREG(st.st_mode):
            synced.add(_keep_preimage(root, path, host))
            entries[path] = {"kind": "file"}
        elif stat.S_ISLNK(st.st_mode):
            entries[path] = {"kind": "link", "target": os.readlink(host)}
    top = os.path.dirname(fsops.target_path(root, PREIMAGES))
    for directory in sorted(_with_parents(synced, top), key=len, reverse=True):
        fsops.fsync_dir(directory)
    doc = {"paths": entries, "created": sorted(set(created)), "units": _unit_tree(root)}
    data = json.dumps(doc, indent=1).encode()
    fsops.write_file(root, RECORD, data, STATE_FILE_MODE, dir_mode=STATE_DIR_MODE)


def _keep_preimage(root: Root, path: str, host: str) -> str:
    """Keep the file at ``path`` as it is now; the host directory its preimage is in.

    A hard link, where the file and the state directory share a filesystem: an update never
    writes a file in place (every write is a new file renamed over the old name, a removal an
    unlink), so the linked inode keeps the old bytes, mode, owner, times and xattrs without a
    copy or an fsync of its own. Elsewhere (another filesystem, a link refused), a durable copy.
    A rollback links it back (:func:`_put_back`)."""
    keep = PREIMAGES + path
    fsops.ensure_dir(root, os.path.dirname(keep), 0o700)
    host_keep = fsops.target_path(root, keep)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(host_keep)  # a stale preimage of a record that never finished
    try:
        os.link(host, host_keep, follow_symlinks=False)
    except OSError as e:
        if e.errno not in fsops.NO_LINK:
            raise
        fsops.copy_preserving(root, path, keep)
    return os.path.dirname(host_keep)


def _with_parents(directories: set[str], top: str) -> set[str]:
    """``directories`` and each parent of theirs up to ``top`` (their new entries as well)."""
    found = set()
    for start in directories:
        directory = start
        while directory.startswith(top + "/") and directory not in found:
            found.add(directory)
            directory = os.path.dirname(directory)
    return found | ({top} if directories else set())


def _read(root: Root) -> dict[str, Any] | None:
    try:
        doc: dict[str, Any] = json.loads(root.read_bytes(RECORD))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, HostError) as e:
        raise HostError(f"unreadable undo record {RECORD}: {e}") from e
    return doc


def put_back_files(root: Root, paths: list[str]) -> set[str]:
    """The files step of a rollback: each of ``paths`` the record kept as a file put back now
    (its preimage linked back, as :func:`restore` will find it); the paths put back. No
    record, or a path it holds no file for (absent, a link): the caller writes it."""
    doc = _read(root)
    recorded = doc.get("paths", {}) if doc is not None else {}
    done: set[str] = set()
    synced: set[str] = set()
    for path in paths:
        entry = recorded.get(path)
        if entry is None or entry.get("kind") != "file":
            continue
        if _put_back(root, path, entry):
            synced.add(os.path.dirname(fsops.target_path(root, path)))
        done.add(path)
    for directory in sorted(synced):
        fsops.fsync_dir(directory)
    return done


def restore(root: Root) -> None:
    """Put every recorded path back as it was; remove what the update made. No record: no-op."""
    doc = _read(root)
    if doc is None:
        return
    synced: set[str] = set()  # the directories whose entries changed: one fsync each
    for path, entry in doc.get("paths", {}).items():
        if _put_back(root, path, entry):
            synced.add(os.path.dirname(fsops.target_path(root, path)))
    for directory in sorted(synced):
        fsops.fsync_dir(directory)
    _restore_units(root, doc.get("units", {}))
    for node_dir in sorted(doc.get("created", []), key=len, reverse=True):
        _rmdir_if_empty(root, node_dir)


def discard(root: Root) -> None:
    """Remove the record and its preimages (an update committed, rolled back or never begun).

    The record goes at once and durably: without it, no rollback reads the preimages. In the
    agent (:func:`sweep_in_background`) the preimages are renamed aside (one rename) and
    unlinked by a thread of their own, off the update's path: unlinking them is where the old
    files' blocks are freed, the slowest part of a commit. A process that exits waits for that
    thread (:func:`settle`); the asides a killed process left are removed by the next
    :func:`record`. Elsewhere (a one-shot command) they go before this returns."""
    fsops.remove(root, RECORD)
    if not _background.is_set():
        fsops.remove(root, PREIMAGES)
        return
    host = fsops.target_path(root, PREIMAGES)
    if not os.path.lexists(host):
        return
    aside = f"{host}{_ASIDE}{os.getpid()}.{next(_asides)}"
    os.rename(host, aside)
    root.changed()
    sweep = threading.Thread(target=shutil.rmtree, args=(aside,), kwargs={"ignore_errors": True},
                             name="undo-sweep")  # fmt: skip
    sweep.start()
    _sweeps[aside] = sweep


def sweep_in_background() -> None:
    """From now on, :func:`discard` leaves the preimages to a thread (the agent's updates)."""
    _background.set()


def settle() -> None:
    """Wait until every preimage :func:`discard` put aside is gone."""
    for aside in list(_sweeps):
        _sweeps.pop(aside).join()


_ASIDE = ".discarded."
_asides = itertools.count()
_sweeps: dict[str, threading.Thread] = {}
_background = threading.Event()


def _remove_asides(root: Root) -> None:
    """The preimages a killed process put aside and never removed (this process's own
    asides are its sweeps' to remove: never waited for here)."""
    for aside, sweep in list(_sweeps.items()):
        if not sweep.is_alive():
            del _sweeps[aside]
    host = fsops.target_path(root, PREIMAGES)
    parent, name = os.path.split(host)
    with contextlib.suppress(FileNotFoundError):
        for entry in os.scandir(parent):
            ours = entry.path in _sweeps
            if (
                entry.name.startswith(name + _ASIDE)
                and not ours
                and entry.is_dir(follow_symlinks=False)
            ):
                shutil.rmtree(entry.path, ignore_errors=True)


def _missing_parents(root: Root, host: str) -> list[str]:
    prefix = root.path.rstrip("/")
    missing, parent = [], os.path.dirname(host)
    while not os.path.lexists(parent) and parent.startswith(prefix + "/"):
        missing.append(parent.removeprefix(prefix))
        parent = os.path.dirname(parent)
    return missing


def _unit_tree(root: Root) -> dict[str, str]:
    """Every symlink (-> its target) and directory (-> '') under the unit directory."""
    top = fsops.target_path(root, UNIT_DIR)
    if not os.path.isdir(top) or os.path.islink(top):
        return {}
    tree: dict[str, str] = {}
    for here, dirs, files in os.walk(top):  # os.walk never follows a symlinked directory
        for name in [*dirs, *files]:
            host = os.path.join(here, name)
            rel = os.path.relpath(host, top)
            if os.path.islink(host):
                tree[rel] = "->" + os.readlink(host)
            elif os.path.isdir(host):
                tree[rel] = ""
    return tree


def _put_back(root: Root, path: str, entry: dict[str, str]) -> bool:
    """Put ``path`` back as recorded; True when its directory is left to the caller to fsync.

    A file is its preimage linked back over the name: the very inode the node had before the
    update (its bytes, mode, owner, times, xattrs and any other names it has), nothing copied
    and nothing to fsync but the directory (preimages are never written, only unlinked). A
    preimage that is a copy on another filesystem is copied back."""
    with contextlib.suppress(OSError, HostError):  # staged, never renamed: a killed writer's
        fsops.remove_temp(root, path)
    kind = entry.get("kind")
    if kind == "file":
        if _is_preimage(root, path):
            return False  # put back already (the files step of the rollback)
        if fsops.link_over(root, PREIMAGES + path, path, sync_dir=False):
            return True
        fsops.copy_preserving(root, PREIMAGES + path, path)
    elif kind == "link":
        fsops.write_symlink(root, path, entry["target"])
    elif kind == "absent":
        try:
            if fsops.remove_file(root, path, sync_dir=False):
                log.info("Removed %s: the update created it", goquote(path))
                return True
        except IsADirectoryError:
            log.warning("Not removing %s: a directory is there", goquote(path))
    return False


def _is_preimage(root: Root, path: str) -> bool:
    """Whether the node's file at ``path`` is its preimage's inode (linked back already)."""
    try:
        now = os.lstat(fsops.target_path(root, path))
        kept = os.lstat(fsops.target_path(root, PREIMAGES + path))
    except (FileNotFoundError, NotADirectoryError):
        return False
    return stat.S_ISREG(now.st_mode) and (now.st_dev, now.st_ino) == (kept.st_dev, kept.st_ino)


def _restore_units(root: Root, before: dict[str, str]) -> None:
    top = fsops.target_path(root, UNIT_DIR)
    now = _unit_tree(root)
    for rel, what in now.items():  # links the update (or a preset in its rollback) made
        if what.startswith("->") and before.get(rel) != what:
            fsops.remove(root, f"{UNIT_DIR}/{rel}")
    for rel, what in sorted(before.items()):  # links it removed (a disable), as they were
        if what.startswith("->") and now.get(rel) != what:
            fsops.write_symlink(root, f"{UNIT_DIR}/{rel}", what[2:])
    for rel in sorted((r for r, w in now.items() if w == "" and r not in before), key=len,
                      reverse=True):  # fmt: skip
        _rmdir_if_empty(root, f"{UNIT_DIR}/{rel}", host=os.path.join(top, rel))


def _rmdir_if_empty(root: Root, node_dir: str, host: str | None = None) -> None:
    """``rmdir`` of a directory the update made, judged where it resolves inside the root
    (its parents as the node sees them); a symlink or a directory with anything in it stays."""
    try:
        target = host or fsops.target_path(root, node_dir)
    except (OSError, HostError):
        return  # it no longer resolves inside the root: nothing of ours is there
    if os.path.islink(target) or not os.path.isdir(target):
        return
    try:
        os.rmdir(target)
    except OSError as e:
        if e.errno not in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOENT):
            raise
        return
    root.changed()
    log.info("Removed directory %s: the update created it", goquote(node_dir))
