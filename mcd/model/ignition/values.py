"""Values the OS cannot take, refused before any write (pure).

A NUL or a control character in a kernel argument, an image reference, a
password hash, a user, unit or dropin name ends up in a command line, a file
name or ``/etc/shadow``, where the OS either rejects it half-way through an
update or reads it as something else (a newline is a second record). Unit and
dropin text must be UTF-8 (a lone surrogate cannot be written) and free of
control characters other than tab, newline and carriage return. Messages name
the position, never quote the text: the text may be a secret.
"""

from __future__ import annotations

from collections.abc import Iterator

from mcd.model.text import goquote

TEXT_CONTROLS_ALLOWED = frozenset("\t\n\r")


def _is_control(c: str) -> bool:
    return c < " " or c == "\x7f"


def control_problem(value: str) -> str | None:
    """Why a one-line value cannot be used: a NUL or control character, or a lone surrogate."""
    for i, c in enumerate(value):
        if c == "\x00":
            return f"contains a NUL byte at offset {i}"
        if _is_control(c):
            return f"contains the control character U+{ord(c):04X} at offset {i}"
        if "\ud800" <= c <= "\udfff":
            return f"is not valid UTF-8 at offset {i}"
    return None


def text_problem(text: str) -> str | None:
    """Why unit or dropin text cannot be written: not UTF-8, or a control character."""
    line, column = 1, 0
    for c in text:
        column += 1
        if c == "\n":
            line, column = line + 1, 0
            continue
        if "\ud800" <= c <= "\udfff":
            return f"not valid UTF-8 at line {line}, column {column}"
        if _is_control(c) and c not in TEXT_CONTROLS_ALLOWED:
            return f"control character U+{ord(c):04X} at line {line}, column {column}"
    return None


def spec_value_problems(
    os_image_url: str, kernel_arguments: tuple[str, ...], extensions: tuple[str, ...]
) -> Iterator[str]:
    bad = control_problem(os_image_url)
    if bad:
        yield f"spec.osImageURL: invalid image reference {goquote(os_image_url)}: {bad}"
    for i, karg in enumerate(kernel_arguments):
        bad = control_problem(karg)
        if bad:
            yield f"spec.kernelArguments[{i}]: invalid kernel argument {goquote(karg)}: {bad}"
    for i, ext in enumerate(extensions):
        bad = control_problem(ext)
        if bad:
            yield f"spec.extensions[{i}]: invalid extension {goquote(ext)}: {bad}"
