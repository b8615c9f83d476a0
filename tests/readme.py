"""The README's command blocks, so that tests run what the README says (issue 40: docs that
cannot rot): the ```sh blocks of a section found by its heading, split into commands the way a
shell reads them (comments dropped, backslash continuations joined, words as ``shlex`` splits
them)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$")


def section(heading: str, text: str | None = None, subsections: bool = True) -> str:
    """The text under the heading that starts with ``heading``, up to the next heading of the
    same or a higher level (any heading without ``subsections``); a ``#`` comment inside a
    fenced block is no heading."""
    lines = (README.read_text() if text is None else text).splitlines()
    found: list[str] | None = None
    level = 0
    fenced = False
    for line in lines:
        if line.startswith("```"):
            fenced = not fenced
        m = None if fenced or line.startswith("```") else _HEADING.match(line)
        if found is not None:
            if m and (len(m.group(1)) <= level or not subsections):
                break
            found.append(line)
        elif m and m.group(2).startswith(heading):
            found, level = [], len(m.group(1))
    if found is None:
        raise LookupError(f"README.md has no heading {heading!r}")
    return "\n".join(found)


def sh_blocks(heading: str, text: str | None = None) -> list[str]:
    """The ```sh blocks directly under ``heading`` (not those of its subsections), in order."""
    own = section(heading, text, subsections=False)
    return re.findall(r"^```sh\n(.*?)^```", own, flags=re.M | re.S)


def commands(block: str) -> list[list[str]]:
    """Each command of a block as its words: continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n", " ", block)
    out: list[list[str]] = []
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        if words:
            out.append(words)
    return out
