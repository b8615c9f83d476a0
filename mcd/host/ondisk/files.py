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

    Everything is decoded and every owner resolved before the first write, so a
    bad entry fails the whole call with nothing on disk changed. Returns the
    number of files written.
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
    prepared: list[tuple[File, bytes, fsops.Ownership]] = []
    for file in files:
        if skip_certificate_write and file.path == KUBELET_CA:
            continue
        if file.append:
            raise HostError("found an append section when writing files. Append is not supported")
        try:
            data = file.data()
        except DecodeError as e:
            raise HostError(e.detail) from e
        fsops.target_path(root, file.path)  # refuse escapes before anything is written
        prepared.append((file, data, accounts.ownership(file)))
    # each file's rename is made durable with one fsync of its directory after the last
    # file, not one per file: until the step is recorded done, a crash writes them all again
    directories: dict[str, str] = {}
    for count, (file, data, owner) in enumerate(prepared, 1):
        log.info("Writing file %s", goquote(file.path))
        try:
            backups.preserve(file.path)
            fsops.write_file(root, file.path, data, file.effective_mode, owner, sync_dir=False)
            directories.setdefault(os.path.dirname(fsops.target_path(root, file.path)), file.path)
            if on_written is not None:
                on_written(count)
        except OSError as e:  # ENOSPC, EROFS, EDQUOT...: name the file, not just the errno
            raise HostError(f"failed to write file {goquote(file.path)}: {e.strerror or e}") from e
    for directory, path in directories.items():
        try:
            fsops.fsync_dir(directory)
        except OSError as e:
            raise HostError(f"failed to write file {goquote(path)}: {e.strerror or e}") from e
    return len(prepared)
