"""Kernel arguments: split MachineConfig entries, build rpm-ostree's argument list, and judge
what a boot loader would drop or misparse."""

from __future__ import annotations

from collections.abc import Iterable

from mcd.model.text import goquote

_C_SPACE = " \t\n\v\f\r"


def split_kernel_arguments(entry: str) -> list[str]:
    """Split one ``spec.kernelArguments`` entry into arguments.

    As upstream's ``splitKernelArguments``: C-locale whitespace separates
    arguments, double quotes group (and stay in the argument), no escapes.
    """
    args: list[str] = []
    current: list[str] = []
    quoted = False
    for ch in entry:
        if ch == '"':
            quoted = not quoted
            current.append(ch)
        elif ch in _C_SPACE and not quoted:
            if current:
                args.append("".join(current))
                current = []
        else:
            current.append(ch)
    if current:
        args.append("".join(current))
    return args


def parse_kernel_arguments(entries: Iterable[str]) -> list[str]:
    """All arguments of a MachineConfig's ``kernelArguments``, in order, duplicates kept."""
    return [arg for entry in entries for arg in split_kernel_arguments(entry)]


def rpm_ostree_kargs(old: Iterable[str], new: Iterable[str]) -> list[str]:
    """``rpm-ostree kargs`` options moving from ``old`` to ``new`` (upstream ``generateKargs``).

    Every old argument is removed if present, then every new one appended: the
    order and duplicates of the new list are what the node ends with.
    """
    old_args = parse_kernel_arguments(old)
    new_args = parse_kernel_arguments(new)
    return [f"--delete-if-present={a}" for a in old_args] + [f"--append={a}" for a in new_args]


def missing_kernel_arguments(expected: Iterable[str], booted: str) -> list[str]:
    """Expected arguments absent from ``rpm-ostree kargs`` output (split on single spaces)."""
    present = set(booted.strip().split(" "))
    return [a for a in parse_kernel_arguments(expected) if a not in present]


GRUB_SPECIAL = "$\\'{}|&;<>"
"""What GRUB's script lexer (``grub-core/script/yylex.l``) does not take as an ordinary word
character, but for blanks and the double quote: ``$`` expands a variable, ``\\`` escapes and
``'`` quotes (both removed before the kernel sees the argument), ``{`` ``}`` are blocks and
``|`` ``&`` ``;`` ``<`` ``>`` end the command. Every boot loader mcd drives hands the arguments
to that lexer: the GRUB drop-in's arguments are copied into ``grub.cfg``'s ``linux`` line, and
the ``options`` line of a BLS entry (grubby's, rpm-ostree's) is turned into the same script by
GRUB's ``blscfg`` (which is why ``options $kernelopts`` works)."""

GRUB_RESERVED = ("[[", "]]")
"""Words GRUB's lexer always reads as tokens the ``linux`` command cannot take."""


def boot_loader_problem(entry: str) -> str | None:
    """Why the boot loader would drop or misparse one ``spec.kernelArguments`` entry; None
    when it reaches the kernel as written. Control characters (a newline ends GRUB's line)
    are the gate's general check."""
    if entry.count('"') % 2:
        return (
            "unbalanced double quote: GRUB would read the rest of the line as quoted "
            "(grub-mkconfig fails, or the arguments after it are misread)"
        )
    for arg in split_kernel_arguments(entry):
        if arg.startswith("#"):
            return (
                f"{goquote(arg)} starts with #: GRUB reads it and every argument after it as a "
                "comment, so they never reach the kernel"
            )
        if arg in GRUB_RESERVED:
            return f"{goquote(arg)} is a reserved word of GRUB's script language"
        special = sorted({c for c in arg if c in GRUB_SPECIAL}, key=GRUB_SPECIAL.index)
        if special:
            return (
                f"{goquote(arg)} has {' '.join(special)}: special to GRUB's script lexer "
                "($ expands, \\ and ' are removed, { } | & ; < > split the line), so the "
                "kernel would not get it as written"
            )
    return None
