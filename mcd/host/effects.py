"""One node's host effects, wired together: what the update transaction calls."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from mcd.host.accounts import users
from mcd.host.accounts.passwd import Accounts
from mcd.host.fs.backups import Backups, PackageDatabase
from mcd.host.ondisk import files as file_writer
from mcd.host.ondisk import stale, targets, touched, undo
from mcd.host.ondisk.units import UnitWriter
from mcd.host.rootfs import Root
from mcd.host.runner import Runner
from mcd.host.systemd.manager import SystemdManager
from mcd.model.ignition.config import File, IgnitionConfig, Unit, User


class HostEffects:
    """Files, units, stale data, SSH keys and passwords of one root."""

    def __init__(self, root: Root, systemd: SystemdManager, runner: Runner | None = None) -> None:
        self.root = root
        self.systemd = systemd
        self.runner = runner or Runner()
        self.backups = Backups(root, PackageDatabase(root, self.runner))

    def check_targets(
        self,
        cfg: IgnitionConfig,
        *,
        ostree: bool = False,
        old: IgnitionConfig | None = None,
        force: bool = False,
    ) -> None:
        """Refuse, before anything is written, a config whose targets this node cannot take
        (:func:`mcd.host.ondisk.targets.check_targets`); given the ``old`` config, also an
        update that would write or remove an immutable or append-only path
        (:mod:`mcd.host.ondisk.touched`)."""
        with self.root.caching():  # read-only: each parent directory resolved once
            targets.check_targets(self.root, cfg, ostree=ostree)
            if old is not None:
                paths = touched.touched_paths(self.root, old, cfg, force=force)
                touched.check_changeable(self.root, paths)

    def record_undo(self, old: IgnitionConfig, new: IgnitionConfig, *, force: bool) -> None:
        """Before an update's first change: what every path it touches is now
        (:mod:`mcd.host.ondisk.undo`)."""
        with self.root.caching():
            undo.record(self.root, touched.touched_paths(self.root, old, new, force=force))

    def restore_undo(self) -> None:
        """At the end of a rollback: every recorded path exactly as it was."""
        undo.restore(self.root)

    def put_back_files(self, files: list[File], skip_certificate_write: bool = False) -> None:
        """A rollback's files step: each of ``files`` the undo record kept put back as it was
        before the update (:func:`mcd.host.ondisk.undo.put_back_files`: what the rollback's
        end makes of it anyway), the others written from the old config; the actions then
        run again on exactly the files that stay."""
        with self.root.caching():
            restored = undo.put_back_files(self.root, [f.path for f in files])
        rest = [f for f in files if f.path not in restored]
        self.write_files(rest, skip_certificate_write=skip_certificate_write)

    def discard_undo(self) -> None:
        undo.discard(self.root)

    def drifted(self, file: File) -> bool:
        """Whether ``file`` no longer is on disk as its config says."""
        return touched.drifted(self.root, file)

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
        with self.backups.batch():
            UnitWriter(self.root, self.systemd, self.backups).write(units)

    def delete_stale_data(self, old: IgnitionConfig, new: IgnitionConfig) -> None:
        with self.backups.batch():
            stale.delete_stale_data(self.root, old, new, self.backups, self.systemd)

    def update_ssh_keys(self, new: Sequence[User]) -> bool:
        return users.update_ssh_keys(self.root, new, Accounts(self.root))

    def set_password_hashes(self, old: Sequence[User], new: Sequence[User]) -> None:
        users.set_password_hashes(self.root, self.runner, old, new, Accounts(self.root))
