"""Text helpers that reproduce the upstream daemon's Go formatting."""

from __future__ import annotations

import json


def goquote(s: str) -> str:
    """Quote like Go's ``%q``: double quotes, backslash escapes."""
    return json.dumps(s, ensure_ascii=False)


def gooctal(n: int) -> str:
    """Format like Go's ``%#o``: ``0644``, ``04777``, ``0``."""
    if n < 0:
        return "-" + gooctal(-n)
    return "0" + format(n, "o") if n else "0"
