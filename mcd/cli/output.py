"""How commands print objects and tables, as kubectl does: ``-o json|yaml|wide``, aligned
columns, durations (``59m``, ``1h``), label selectors (``role=canary``), and text from the
cluster or a node with its control characters escaped (:func:`clean`).

The one API every command that prints objects or tables uses:

- ``@output_option()``: adds ``-o/--output`` (``json``, ``yaml``, ``wide``) and a hidden
  ``--json`` (``-o json``, for scripts written before ``-o``); read it with
  :func:`output_format`.
- :func:`emit` ``(doc, text)``: prints ``doc`` as JSON or YAML with ``-o json|yaml``, else the
  table ``text(wide)`` builds (``wide``: with ``-o wide``).
- :func:`columns` ``(rows)``: kubectl's table layout (three spaces between left-aligned
  columns, the header first), every cell escaped with :func:`clean`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from mcd.cli.common import FORMATS, output_format, output_option, say
from mcd.model.text import printable, selector_string

__all__ = [
    "FORMATS",
    "clean",
    "columns",
    "emit",
    "exact_duration",
    "human_duration",
    "output_format",
    "output_option",
    "selector_string",
    "short_duration",
]


def clean(text: object) -> str:
    """``text`` from the cluster or a node made safe for a terminal, one line: every control
    character (ESC, BEL, NUL, newline, ...) escaped as Go's ``%q`` escapes it (``\\x1b``,
    ``\\a``, ``\\n``). The one rule for everything a command prints that it did not write."""
    return printable(str(text))


def dump(doc: Any, fmt: str, compact: bool = False) -> str:
    """``doc`` as JSON (``compact``: one line, for a watch) or YAML, ending in a newline.
    Both escape control characters themselves (``\\u001b``, ``\\e``)."""
    if fmt == "yaml":
        import yaml  # noqa: PLC0415  (loaded only for -o yaml)

        return str(yaml.safe_dump(doc, sort_keys=False, allow_unicode=False))
    return json.dumps(doc, indent=None if compact else 2) + "\n"


def emit(doc: Any, text: Callable[[bool], str], compact: bool = False) -> None:
    """Print ``doc`` with ``-o json|yaml``, else ``text(wide)``: the table, ending in a
    newline, its cells already escaped (:func:`columns`)."""
    fmt = output_format()
    if fmt in ("json", "yaml"):
        if fmt == "yaml" and compact:
            say("---")
        say(dump(doc, fmt, compact), nl=False)
    else:
        say(text(fmt == "wide"), nl=False)


def columns(rows: Sequence[Sequence[str]]) -> list[str]:
    """kubectl's table: left-aligned columns three spaces apart, trailing blanks dropped."""
    if not rows:
        return []
    cells = [[clean(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells if i < len(r)) for i in range(len(cells[0]))]
    return ["   ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)).rstrip() for r in cells]


def human_duration(seconds: float) -> str:
    """kubectl's ``AGE`` (apimachinery ``duration.HumanDuration``): ``45s``, ``5m30s``,
    ``59m``, ``3h10m``, ``2d4h``, ``400d``."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m{s % 60}s" if s % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d{hours % 24}h" if hours % 24 else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        years, days = hours // 24 // 365, (hours // 24) % 365
        return f"{years}y{days}d" if days else f"{years}y"
    return f"{hours // 24 // 365}y"


def exact_duration(seconds: float) -> str:
    """A span as the flags take it, nothing rounded, zero units left out: ``1h``, ``1h30m``,
    ``7d``, ``59m``, ``90s`` (``--ttl``, ``--grace``), never Python's ``1:00:00``."""
    s = int(seconds)
    if s <= 0:
        return "0s"
    parts = [(s // 86400, "d"), (s // 3600 % 24, "h"), (s // 60 % 60, "m"), (s % 60, "s")]
    return "".join(f"{n}{unit}" for n, unit in parts if n)


def short_duration(seconds: float) -> str:
    """apimachinery's ``duration.ShortHumanDuration`` (kubeadm's token TTL): one unit,
    ``59m``, ``1h``, ``23h``, ``7d``."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m"
    if s < 86400:
        return f"{s // 3600}h"
    if s < 86400 * 365:
        return f"{s // 86400}d"
    return f"{s // (86400 * 365)}y"
