"""Kernel arguments: split MachineConfig entries, build rpm-ostree's argument list."""

from __future__ import annotations

from collections.abc import Iterable

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
