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
    staged: dict[str, tuple[File, fsops.Staged]] = {}  # by target: a path named twice, last wins
    made: list[str] = []
    count = 0
    try:
        for file in files:
            if skip_certificate_write and file.path == KUBELET_CA:
                continue
            staged_file = _stage(root, file, accounts, made)
            staged.pop(staged_file.host_path, None)  # its temp was this one's: replaced
            staged[staged_file.host_path] = (file, staged_file)
            count += 1
        _commit(root, list(staged.values()), backups, accounts, on_written)
    except BaseException:
        for _, staged_file in staged.values():
            fsops.discard_staged(staged_file)  # the temps not renamed (a renamed one is gone)
        _remove_empty(root, made)
        raise
    return count


def _stage(root: Root, file: File, accounts: Accounts, made: list[str]) -> fsops.Staged:
    if file.append:
        raise HostError("found an append section when writing files. Append is not supported")
    try:
        data = file.data()
    except DecodeError as e:
        raise HostError(e.detail) from e
    owner = accounts.ownership(file)
    try:
        return fsops.stage_file(root, file.path, data, file.effective_mode, owner, made=made)
    except OSError as e:  # ENOSPC, EROFS, EDQUOT...: name the file, not just the errno
        raise HostError(f"failed to write file {goquote(file.path)}: {e.strerror or e}") from e


def _commit(
    root: Root,
    staged: list[tuple[File, fsops.Staged]],
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
            if host_path == staged_file.host_path:
                fsops.commit_staged(root, staged_file)
            else:  # a symlink an earlier file of this batch replaced led its parent elsewhere
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
