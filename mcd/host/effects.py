"""One node's host effects, wired together: what the update transaction calls."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Iterable, Sequence

from mcd.host import files as file_writer
from mcd.host import fsops, stale, users
from mcd.host.accounts import Accounts
from mcd.host.backups import Backups, PackageDatabase
from mcd.host.errors import HostError
from mcd.host.rootfs import Root
from mcd.host.runner import Runner
from mcd.host.systemd import SystemdManager
from mcd.host.units import UnitWriter
from mcd.model.ignition import File, IgnitionConfig, Unit, User
from mcd.model.vocabulary import dropin_path, unit_path


class HostEffects:
    """Files, units, stale data, SSH keys and passwords of one root."""

    def __init__(self, root: Root, systemd: SystemdManager, runner: Runner | None = None) -> None:
        self.root = root
        self.systemd = systemd
        self.runner = runner or Runner()
        self.backups = Backups(root, PackageDatabase(root, self.runner))

    def check_targets(self, cfg: IgnitionConfig) -> None:
        """Refuse, before anything is written, a config whose targets the node cannot take:
        a parent symlink leading out of the root or in a loop, or an owner it does not know."""
        paths = [f.path for f in cfg.files]
        for unit in cfg.units:
            paths.append(unit_path(unit.name))
            paths.extend(dropin_path(unit.name, d.name) for d in unit.dropins)
        for path in paths:
            try:
                host_path = fsops.target_path(self.root, path)
            except OSError as e:
                if e.errno != errno.ELOOP:
                    raise
                raise HostError(f"refusing to write {path}: too many levels of symlinks") from e
            if os.path.isdir(host_path) and not os.path.islink(host_path):
                raise HostError(f"cannot write file {path}: a directory is in the way")
            parent = os.path.dirname(host_path)
            while not os.path.lexists(parent) and parent.startswith(self.root.path + "/"):
                parent = os.path.dirname(parent)
            if not os.path.isdir(parent):
                where = parent.removeprefix(self.root.path) or "/"
                raise HostError(f"cannot write file {path}: {where} is not a directory")
        accounts = Accounts(self.root)
        for file in cfg.files:
            accounts.ownership(file)

    def write_files(
        self,
        files: Iterable[File],
        skip_certificate_write: bool = False,
        on_written: Callable[[int], None] | None = None,
    ) -> int:
        return file_writer.write_files(
            self.root, files, self.backups, Accounts(self.root), skip_certificate_write, on_written
        )

    def write_units(self, units: Iterable[Unit]) -> None:
        UnitWriter(self.root, self.systemd, self.backups).write(units)

    def delete_stale_data(self, old: IgnitionConfig, new: IgnitionConfig) -> None:
        stale.delete_stale_data(self.root, old, new, self.backups, self.systemd)

    def update_ssh_keys(self, new: Sequence[User]) -> bool:
        return users.update_ssh_keys(self.root, new, Accounts(self.root))

    def set_password_hashes(self, old: Sequence[User], new: Sequence[User]) -> None:
        users.set_password_hashes(self.root, self.runner, old, new, Accounts(self.root))
