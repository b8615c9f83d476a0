"""Kernel arguments through the host's boot loader where rpm-ostree is absent: GRUB's managed
drop-in regenerated with the distribution's own command, or ``grubby`` on BLS entries.

The rule and the drop-in are pure (:mod:`mcd.model.osupdate.bootargs`). The undo of a move
from ``old`` to ``new`` is the move back (the drop-in is a function of the arguments, and
grubby's removal then addition is symmetric), so an interrupted update's rollback simply
applies the old config's arguments again. Commands run inside the root (``chroot``) when the
root is a mounted host, as rpm-ostree's do.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from mcd.host.bootloader.detect import find_tool
from mcd.host.errors import HostError
from mcd.host.fs import fsops
from mcd.host.rootfs import Root
from mcd.host.runner import CommandError, Runner
from mcd.model.osupdate.bootargs import (
    DROPIN_MODE,
    GRUB_DROPIN,
    GRUB_DROPIN_DIR,
    grub_dropin,
    grubby_commands,
    missing_from_cmdline,
)
from mcd.model.planning.applicability import GRUB, GRUBBY
from mcd.model.text import goquote

log = logging.getLogger(__name__)

GRUB_CONFIGS = ("/boot/grub/grub.cfg", "/boot/grub2/grub.cfg")
PROC_CMDLINE = "/proc/cmdline"


class BootLoaderError(HostError):
    """The boot loader's tool failed or is missing; the message names the command."""


class BootLoader:
    """One root's boot loader for kernel arguments: ``grub`` or ``grubby``."""

    def __init__(self, root: Root, tool: str, runner: Runner | None = None) -> None:
        if tool not in (GRUB, GRUBBY):
            raise ValueError(f"no kernel-argument boot loader {tool!r}")
        self.root = root
        self.tool = tool
        self.runner = runner or Runner()

    def update(self, old: Sequence[str], new: Sequence[str]) -> None:
        """Move the boot configuration from ``old``'s kernel arguments to ``new``'s."""
        if self.tool == GRUB:
            self._write_dropin(new)
            self.regenerate()
        else:
            for argv in grubby_commands(old, new):
                self._run(argv)

    def undo(self, old: Sequence[str], new: Sequence[str]) -> None:
        """Back from ``new`` to ``old`` (the rollback of :meth:`update`)."""
        self.update(new, old)

    def _write_dropin(self, kernel_arguments: Sequence[str]) -> None:
        content = grub_dropin(kernel_arguments)
        if content is None:
            if fsops.remove_file(self.root, GRUB_DROPIN):
                log.info("Removed %s: the config has no kernel arguments", GRUB_DROPIN)
            return
        fsops.ensure_dir(self.root, GRUB_DROPIN_DIR, 0o755)
        fsops.write_file(self.root, GRUB_DROPIN, content, DROPIN_MODE)
        log.info("Wrote %s", GRUB_DROPIN)

    def regenerate(self) -> None:
        """The distribution's own command: ``update-grub``, else ``grub-mkconfig -o`` the
        ``grub.cfg`` that exists."""
        if find_tool(self.root, "update-grub"):
            self._run(["update-grub"])
            return
        config = next((c for c in GRUB_CONFIGS if self.root.exists(c)), GRUB_CONFIGS[0])
        tool = "grub-mkconfig" if find_tool(self.root, "grub-mkconfig") else "grub2-mkconfig"
        self._run([tool, "-o", config])

    def _run(self, argv: list[str]) -> None:
        if self.root.path != "/":
            argv = ["chroot", self.root.path, *argv]
        try:
            self.runner.run(argv)
        except CommandError as e:
            raise BootLoaderError(f"updating kernel arguments: {e}") from e

    # -- checks ----------------------------------------------------------------------------

    def dropin_problem(self, kernel_arguments: Sequence[str]) -> str:
        """'' when the managed drop-in is what the config's arguments make, else what is
        wrong (GRUB only: grubby keeps the arguments in the boot entries themselves)."""
        if self.tool != GRUB:
            return ""
        return dropin_problem(self.root, kernel_arguments)


def dropin_problem(root: Root, kernel_arguments: Sequence[str]) -> str:
    """The managed GRUB drop-in against a config's arguments: '' when it matches."""
    expected = grub_dropin(kernel_arguments)
    try:
        actual: bytes | None = root.read_bytes(GRUB_DROPIN)
    except FileNotFoundError:
        actual = None
    except (OSError, HostError) as e:
        return f"could not read {goquote(GRUB_DROPIN)}: {e}"
    if actual == expected:
        return ""
    if actual is None:
        return f"boot loader drop-in {goquote(GRUB_DROPIN)} is missing"
    if expected is None:
        return (
            f"boot loader drop-in {goquote(GRUB_DROPIN)} exists but the config has no "
            "kernel arguments"
        )
    return f"content mismatch for file {goquote(GRUB_DROPIN)}"


def booted_missing(root: Root, kernel_arguments: Sequence[str]) -> list[str]:
    """Arguments of the config the running kernel was not booted with (``/proc/cmdline``);
    empty when ``/proc/cmdline`` cannot be read (nothing to compare with)."""
    try:
        cmdline = root.read_bytes(PROC_CMDLINE).decode(errors="replace")
    except (OSError, HostError):
        return []
    return missing_from_cmdline(kernel_arguments, cmdline)
