"""Text helpers that reproduce the upstream daemon's Go formatting."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def goquote(s: str) -> str:
    """Quote like Go's ``%q`` (``strconv.Quote``): double quotes, backslash escapes, every
    non-printable character escaped by :func:`escape`; the result is one printable line."""
    if s.isascii() and s.isprintable() and '"' not in s and "\\" not in s:
        return f'"{s}"'  # nothing to escape (a path, usually: one per written file's log line)
    return '"' + "".join(_quoted(c) for c in s) + '"'


def _quoted(c: str) -> str:
    if c in ('"', "\\"):
        return "\\" + c
    return c if c.isprintable() else escape(c)


def printable(s: str, keep: str = "") -> str:
    """``s`` safe for a terminal and one line, unquoted: every non-printable character
    (newline, escape, NUL, ...) but those in ``keep`` is written as :func:`escape` does."""
    if s.isprintable():
        return s
    return "".join(c if c.isprintable() or c in keep else escape(c) for c in s)


_SHORT = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}


def escape(c: str) -> str:
    """The one escape of a non-printable character, as Go's ``strconv.Quote`` writes it:
    ``\\n``, ``\\t``, ...; ``\\x1b`` below 0x80, ``\\u0085``, ``\\U0001f5ff`` above."""
    if c in _SHORT:
        return _SHORT[c]
    n = ord(c)
    return f"\\x{n:02x}" if n < 0x80 else f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}"


def gooctal(n: int) -> str:
    """Format like Go's ``%#o``: ``0644``, ``04777``, ``0``."""
    if n < 0:
        return "-" + gooctal(-n)
    return "0" + format(n, "o") if n else "0"


def selector_string(selector: Mapping[str, Any] | None) -> str:
    """A LabelSelector as kubectl prints one (apimachinery ``metav1.FormatLabelSelector``):
    ``role=canary,zone in (a,b),!legacy``, sorted by key; ``<none>`` for an empty one."""
    if not selector:
        return "<none>"
    parts = [(str(k), f"{k}={v}") for k, v in (selector.get("matchLabels") or {}).items()]
    for expr in selector.get("matchExpressions") or []:
        key, op = str(expr.get("key", "")), str(expr.get("operator", ""))
        values = ",".join(sorted(str(v) for v in expr.get("values") or []))
        shown = {
            "In": f"{key} in ({values})",
            "NotIn": f"{key} notin ({values})",
            "Exists": key,
            "DoesNotExist": f"!{key}",
        }.get(op, f"{key} {op} ({values})")
        parts.append((key, shown))
    return printable(",".join(text for _, text in sorted(parts))) or "<none>"
