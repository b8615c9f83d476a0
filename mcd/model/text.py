"""Text helpers that reproduce the upstream daemon's Go formatting."""

from __future__ import annotations

import json


def goquote(s: str) -> str:
    """Quote like Go's ``%q``: double quotes, backslash escapes."""
    if s.isascii() and s.isprintable() and '"' not in s and "\\" not in s:
        return f'"{s}"'  # nothing to escape (a path, usually: one per written file's log line)
    return json.dumps(s, ensure_ascii=False)


_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def printable(s: str, keep: str = "") -> str:
    """``s`` safe for a terminal and one line: every non-printable character (newline,
    escape, NUL, ...) but those in ``keep`` is written as an escape (``\\n``, ``\\x1b``)."""
    if s.isprintable():
        return s
    return "".join(c if c.isprintable() or c in keep else _escape(c) for c in s)


def _escape(c: str) -> str:
    if c in _ESCAPES:
        return _ESCAPES[c]
    n = ord(c)
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}"


def gooctal(n: int) -> str:
    """Format like Go's ``%#o``: ``0644``, ``04777``, ``0``."""
    if n < 0:
        return "-" + gooctal(-n)
    return "0" + format(n, "o") if n else "0"
