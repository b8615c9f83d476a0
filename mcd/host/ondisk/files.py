"""Writing the Ignition files of a MachineConfig (upstream ``writeFiles``)."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable

from mcd.host.accounts.passwd import Accounts
from mcd.host.errors import HostError
from mcd.host.fs import fsops
from mcd.host.fs.backups import Backups
from mcd.host.rootfs import Root
from mcd.model.errors import DecodeError
from mcd.model.ignition.config import File
from mcd.model.text import goquote
from mcd.model.vocabulary import KUBELET_CA

log = logging.getLogger(__name__)


def write_files(
    root: Root,
    files: Iterable[File],
    backups: Backups,
    accounts: Accounts | None = None,
    skip_certificate_write: bool = False,
    on_written: Callable[[int], None] | None = None,
) -> int:
    """Write every file atomically with its mode and owner, backing up originals first.

    Two passes. First every file is decoded, its owner resolved, its path checked and its new
    contents staged in a temp file beside it (fsynced), one file's bytes held at a time; a bad
    entry, or a write that fails, fails the whole call with the staged temps (and the
    directories made for them) removed and no target changed. Then each original is backed
    up and each temp renamed over its target. Returns the number of files written.
    """
    # parents resolved once per batch, forgotten on any dir/link change; the package
    # database (rpm or dpkg, for the backups) looked for once per batch
    with root.caching(), backups.batch():
        return _write_files(root, files, backups, accounts, skip_certificate_write, on_written)


def _write_files(
    root: Root,
    files: Iterable[File],
    backups: Backups,
    accounts: Accounts | None,
    skip_certificate_write: bool,
    on_written: Callable[[int], None] | None,
) -> int:
    accounts = accounts or Accounts(root)
    staged: list[tuple[File, fsops.Staged | None]] = []
    targets: set[str] = set()
    made: list[str] = []
    try:
        for file in files:
            if skip_certificate_write and file.path == KUBELET_CA:
                continue
            staged.append((file, _stage(root, file, accounts, made, targets)))
        _commit(root, staged, backups, accounts, on_written)
    except BaseException:
        for _, staged_file in staged:
            if staged_file is not None:  # the temps not renamed (a renamed one is gone)
                fsops.discard_staged(staged_file)
        _remove_empty(root, made)
        raise
    return len(staged)


def _stage(
    root: Root, file: File, accounts: Accounts, made: list[str], targets: set[str]
) -> fsops.Staged | None:
    """``file`` checked and staged; None when an earlier file of the batch has its target
    (another path leading there through a symlink): checked here, written in its turn."""
    if file.append:
        raise HostError("found an append section when writing files. Append is not supported")
    try:
        data = file.data()
    except DecodeError as e:
        raise HostError(e.detail) from e
    owner = accounts.ownership(file)
    host_path = fsops.target_path(root, file.path)  # refused before anything is written
    if host_path in targets:
        return None  # its temp would replace the earlier one's
    targets.add(host_path)
    try:
        return fsops.stage_file(root, file.path, data, file.effective_mode, owner, made=made)
    except OSError as e:  # ENOSPC, EROFS, EDQUOT...: name the file, not just the errno
        raise HostError(f"failed to write file {goquote(file.path)}: {e.strerror or e}") from e


def _commit(
    root: Root,
    staged: list[tuple[File, fsops.Staged | None]],
    backups: Backups,
    accounts: Accounts,
    on_written: Callable[[int], None] | None,
) -> None:
    # each file's rename is made durable with one fsync of its directory after the last
    # file, not one per file: until the step is recorded done, a crash writes them all again
    directories: dict[str, str] = {}
    for count, (file, staged_file) in enumerate(staged, 1):
        log.info("Writing file %s", goquote(file.path))
        try:
            backups.preserve(file.path)
            host_path = fsops.target_path(root, file.path)
            if staged_file is not None and host_path == staged_file.host_path:
                fsops.commit_staged(root, staged_file)
            else:  # a target an earlier file had, or a symlink an earlier file of this
                # batch replaced led its parent elsewhere: written as one file alone is
                if staged_file is not None:
                    fsops.discard_staged(staged_file)
                fsops.write_file(
                    root, file.path, file.data(), file.effective_mode,
                    accounts.ownership(file), sync_dir=False,
                )  # fmt: skip
            directories.setdefault(os.path.dirname(host_path), file.path)
            if on_written is not None:
                on_written(count)
        except OSError as e:  # ENOSPC, EROFS, EDQUOT...: name the file, not just the errno
            raise HostError(f"failed to write file {goquote(file.path)}: {e.strerror or e}") from e
    for directory, path in directories.items():
        try:
            fsops.fsync_dir(directory)
        except OSError as e:
            raise HostError(f"failed to write file {goquote(path)}: {e.strerror or e}") from e


def _remove_empty(root: Root, made: list[str]) -> None:
    """``rmdir`` the directories this batch made that hold nothing (deepest first)."""
    removed = False
    for directory in reversed(made):
        try:
            os.rmdir(directory)
            removed = True
        except OSError:
            continue  # a file of the batch was renamed into it, or something else is there
    if removed:
        root.changed()
