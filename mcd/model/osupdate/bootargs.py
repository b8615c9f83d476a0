"""Kernel arguments through a boot loader that is not rpm-ostree's (pure).

The same rule as upstream's ``generateKargs``: every argument of the old config goes, every
argument of the new one comes, in the new config's order (duplicates kept); arguments mcd
did not set stay. Two mechanisms:

- **GRUB** (Debian, Ubuntu): a managed drop-in, :data:`GRUB_DROPIN`, that
  ``grub-mkconfig`` sources after ``/etc/default/grub`` and that appends the config's
  arguments to ``GRUB_CMDLINE_LINUX``. Its content is a function of the arguments alone, so
  the old config's drop-in is the rollback and a drop-in edited by hand is drift. The
  arguments are single-quoted for the shell that sources it: no expansion, whatever they hold.
- **grubby** (Boot Loader Specification entries): ``--remove-args`` of the old arguments,
  then ``--args`` of the new ones, on every kernel.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from mcd.model.osupdate.kargs import parse_kernel_arguments, split_kernel_arguments

GRUB_DROPIN_DIR = "/etc/default/grub.d"
GRUB_DROPIN = f"{GRUB_DROPIN_DIR}/99-mcd-kernel-arguments.cfg"
"""Sourced last (``*.cfg`` in name order), so no other drop-in resets what it appends."""
GRUB_DEFAULTS = "/etc/default/grub"
DROPIN_MODE = 0o644

_HEADER = (
    "# Written by mcd: the kernel arguments of the node's MachineConfig (spec.kernelArguments).\n"
    "# Do not edit: `mcd validate` reports a change, and the next update rewrites this file.\n"
)


def shell_quote(text: str) -> str:
    """``text`` as one single-quoted shell word (``'`` as ``'\\''``): nothing expands."""
    return "'" + text.replace("'", "'\\''") + "'"


def grub_dropin(kernel_arguments: Iterable[str]) -> bytes | None:
    """The drop-in for a config's ``kernelArguments``; None when it has none (no file)."""
    args = parse_kernel_arguments(kernel_arguments)
    if not args:
        return None
    joined = shell_quote(" ".join(args))
    line = f'GRUB_CMDLINE_LINUX="${{GRUB_CMDLINE_LINUX:+$GRUB_CMDLINE_LINUX }}"{joined}\n'
    return (_HEADER + line).encode()


def grubby_commands(old: Sequence[str], new: Sequence[str]) -> list[list[str]]:
    """``grubby`` invocations moving every kernel from ``old`` to ``new`` (upstream's rule:
    remove every old argument, then add every new one)."""
    old_args, new_args = parse_kernel_arguments(old), parse_kernel_arguments(new)
    commands = []
    if old_args:
        commands.append(["grubby", "--update-kernel=ALL", f"--remove-args={' '.join(old_args)}"])
    if new_args:
        commands.append(["grubby", "--update-kernel=ALL", f"--args={' '.join(new_args)}"])
    return commands


def missing_from_cmdline(expected: Iterable[str], cmdline: str) -> list[str]:
    """Expected arguments absent from a kernel command line (``/proc/cmdline``), argument by
    argument. Double quotes only group for the kernel (``a="x"`` is ``a=x``), and GRUB's
    script parser drops and re-adds them, so both sides are compared without them."""
    present = {_unquoted(a) for a in split_kernel_arguments(cmdline)}
    return [a for a in parse_kernel_arguments(expected) if _unquoted(a) not in present]


def _unquoted(arg: str) -> str:
    return arg.replace('"', "")
