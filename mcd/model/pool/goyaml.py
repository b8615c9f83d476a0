"""YAML text exactly as gopkg.in/yaml.v2 v2.4.0 ``Marshal`` writes JSON-shaped data.

Upstream names a rendered config after ``ghodss/yaml.Marshal(spec)``: Go's JSON encoding,
read back by yaml.v2 as plain data (maps, lists, strings, ints, floats, bools, null) and
written again by yaml.v2. This module writes that second step for the same data, following
yaml.v2's encoder (``encode.go``: which style a string asks for, how numbers look, the key
order of ``sorter.go``) and its port of libyaml's emitter (``emitterc.go``: scalar analysis,
style selection, 80-column folding, block layout with unindented sequences under a key,
``{}``/``[]`` for empty collections). Only the subset JSON data reaches is covered: no
anchors, tags, flow styles other than empty collections, or canonical mode. The golden
vectors in ``tests/data/render-hash-golden.json`` (made by the Go program in
``tests/oracles/renderhash``) pin it byte for byte.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

from mcd.model.pool.goscalar import DOUBLE, LITERAL, PLAIN, scalar_text, sorted_keys

BEST_WIDTH = 80
BEST_INDENT = 2
_BREAKS = "\r\n\x85\u2028\u2029"
_SINGLE = "single"
_ESCAPES = {
    0x00: "0", 0x07: "a", 0x08: "b", 0x09: "t", 0x0A: "n", 0x0B: "v", 0x0C: "f", 0x0D: "r",
    0x1B: "e", 0x22: '"', 0x5C: "\\", 0x85: "N", 0xA0: "_", 0x2028: "L", 0x2029: "P",
}  # fmt: skip


def marshal(value: Any) -> str:
    """The document yaml.v2 writes for ``value`` (JSON-shaped data)."""
    emitter = _Emitter()
    emitter.node(value, root=True)
    emitter.write_indent()  # document end
    if emitter.open_ended:
        emitter.indicator("...", True, False, False)
        emitter.write_indent()
    return "".join(emitter.out)


# --- the emitter (emitterc.go) ---


def _printable(c: str) -> bool:
    o = ord(c)
    return (
        o == 0x0A
        or 0x20 <= o <= 0x7E
        or 0xA0 <= o <= 0xD7FF
        or (0xE000 <= o <= 0xFFFD and o != 0xFEFF)
    )


_WORD = re.compile(r"[\x21-\x7e]+")
"""Printable ASCII without spaces: no break, no space, nothing special to analyze per char."""
_FLOW_INSIDE = re.compile(r"[,?\[\]{}:]")
_FIRST_BOTH = "#,[]{}&*!|>'\"%@`"


@functools.lru_cache(maxsize=4096)
def _key_analysis(text: str) -> _Analysis:
    """A mapping key's analysis (keys repeat: every file has ``path``, ``contents`` ...)."""
    return _Analysis(text)


class _Analysis:
    """``yaml_emitter_analyze_scalar``: which styles can carry the text (read only)."""

    def __init__(self, value: str, *, fast: bool = True) -> None:
        self.multiline = False
        self.flow_plain = self.block_plain = self.single = self.block = True
        if fast and _WORD.fullmatch(value):
            self._word(value)
        else:
            self._chars(value)

    def _word(self, value: str) -> None:
        """The outcome of :meth:`_chars` for one word of printable ASCII, from its ends: with
        no space or break in it, only the first character, a ``:`` at its end and the flow
        indicators after the first decide (each character is printable, none preceded by
        whitespace)."""
        first, n = value[0], len(value)
        both = value.startswith(("---", "...")) or first in _FIRST_BOTH
        both = both or (n == 1 and first in "?:-")
        if both or first in "?:" or _FLOW_INSIDE.search(value, 1):
            self.flow_plain = False
        if both or (n > 1 and value[-1] == ":"):
            self.block_plain = False

    def _chars(self, value: str) -> None:
        if not value:
            self.flow_plain, self.block = False, False
            return
        flow_ind = block_ind = value.startswith(("---", "..."))
        line_breaks = special = False
        leading_space = leading_break = trailing_space = trailing_break = False
        break_space = space_break = previous_space = previous_break = False
        preceded_ws = True
        n = len(value)
        for i, c in enumerate(value):
            followed_ws = i + 1 >= n or value[i + 1] in " \t"
            if i == 0:
                if c in "#,[]{}&*!|>'\"%@`":
                    flow_ind = block_ind = True
                elif c in "?:":
                    flow_ind = True
                    block_ind = block_ind or followed_ws
                elif c == "-" and followed_ws:
                    flow_ind = block_ind = True
            elif c in ",?[]{}":
                flow_ind = True
            elif c == ":":
                flow_ind = True
                block_ind = block_ind or followed_ws
            elif c == "#" and preceded_ws:
                flow_ind = block_ind = True
            if not _printable(c):
                special = True
            if c == " ":
                leading_space = leading_space or i == 0
                trailing_space = trailing_space or i == n - 1
                break_space = break_space or previous_break
                previous_space, previous_break = True, False
            elif c in _BREAKS:
                line_breaks = True
                leading_break = leading_break or i == 0
                trailing_break = trailing_break or i == n - 1
                space_break = space_break or previous_space
                previous_space, previous_break = False, True
            else:
                previous_space = previous_break = False
            preceded_ws = c in " \t" or c in _BREAKS or c == "\x00"
        self.multiline = line_breaks
        if leading_space or leading_break or trailing_space or trailing_break or line_breaks:
            self.flow_plain = self.block_plain = False
        if trailing_space:
            self.block = False
        if break_space:
            self.flow_plain = self.block_plain = self.single = False
        if space_break or special:
            self.flow_plain = self.block_plain = self.single = self.block = False
        if flow_ind:
            self.flow_plain = False
        if block_ind:
            self.block_plain = False


class _Emitter:
    """The emitter state yaml.v2 keeps for one document (indents, column, flags)."""

    def __init__(self) -> None:
        self.out: list[str] = []
        self.indent = -1
        self.indents: list[int] = []
        self.column = 0
        self.whitespace = True
        self.indention = True
        self.open_ended = False
        self.flow_level = 0

    # low-level writers
    def put(self, text: str) -> None:
        self.out.append(text)
        self.column += len(text)

    def put_break(self) -> None:
        self.out.append("\n")
        self.column = 0

    def write_break(self, c: str) -> None:
        if c == "\n":
            self.put_break()
        else:
            self.out.append(c)
            self.column = 0

    def write_indent(self) -> None:
        indent = max(self.indent, 0)
        if (
            not self.indention
            or self.column > indent
            or (self.column == indent and not self.whitespace)
        ):
            self.put_break()
        if self.column < indent:
            self.put(" " * (indent - self.column))
        self.whitespace = self.indention = True

    def indicator(self, text: str, need_ws: bool, is_ws: bool, is_indention: bool) -> None:
        if need_ws and not self.whitespace:
            self.put(" ")
        self.put(text)
        self.whitespace = is_ws
        self.indention = self.indention and is_indention
        self.open_ended = False

    def increase_indent(self, flow: bool, indentless: bool) -> None:
        self.indents.append(self.indent)
        if self.indent < 0:
            self.indent = BEST_INDENT if flow else 0
        elif not indentless:
            self.indent += BEST_INDENT

    def pop_indent(self) -> None:
        self.indent = self.indents.pop()

    # nodes
    def node(
        self, value: Any, *, root: bool = False, sequence: bool = False, mapping: bool = False,
        simple_key: bool = False,
    ) -> None:  # fmt: skip
        if isinstance(value, Mapping):
            if not value or self.flow_level:
                self.indicator("{", True, True, False)
                self.indicator("}", False, False, False)
                return
            self.increase_indent(False, False)
            for key in sorted_keys(list(value)):
                self.mapping_entry(key, value[key])
            self.pop_indent()
        elif isinstance(value, list | tuple):
            if not value or self.flow_level:
                self.indicator("[", True, True, False)
                self.indicator("]", False, False, False)
                return
            self.increase_indent(False, mapping and not self.indention)
            for item in value:
                self.write_indent()
                self.indicator("-", True, False, True)
                self.node(item, sequence=True)
            self.pop_indent()
        else:
            self.scalar(value, root=root, simple_key=simple_key)

    def mapping_entry(self, key: str, value: Any) -> None:
        self.write_indent()
        text, _ = scalar_text(key)
        if not _key_analysis(text).multiline and len(text.encode()) <= 128:
            self.node(key, mapping=True, simple_key=True)
            self.indicator(":", False, False, False)
        else:
            self.indicator("?", True, False, True)
            self.node(key, mapping=True)
            self.write_indent()
            self.indicator(":", True, False, True)
        self.node(value, mapping=True)

    def scalar(self, value: Any, *, root: bool, simple_key: bool) -> None:
        text, style = scalar_text(value)
        analysis = _key_analysis(text) if simple_key else _Analysis(text)
        if simple_key and analysis.multiline:
            style = DOUBLE
        if style == PLAIN:
            if (self.flow_level and not analysis.flow_plain) or (
                not self.flow_level and not analysis.block_plain
            ):
                style = _SINGLE
            if not text and (self.flow_level or simple_key):
                style = _SINGLE
        if style == _SINGLE and not analysis.single:
            style = DOUBLE
        if style == LITERAL and (not analysis.block or self.flow_level or simple_key):
            style = DOUBLE
        self.increase_indent(True, False)
        breaks_allowed = not simple_key
        if style == PLAIN:
            self.write_plain(text, breaks_allowed, root)
        elif style == _SINGLE:
            self.write_single(text, breaks_allowed)
        elif style == DOUBLE:
            self.write_double(text, breaks_allowed)
        else:
            self.write_literal(text)
        self.pop_indent()

    def write_plain(self, value: str, allow_breaks: bool, root: bool) -> None:
        if not self.whitespace:
            self.put(" ")
        if _WORD.fullmatch(value):  # no space to fold at, no break: the word as it is
            self.put(value)
            self.indention = False
        else:
            self._plain_chars(value, allow_breaks)
        self.whitespace = self.indention = False
        if root:
            self.open_ended = True

    def _plain_chars(self, value: str, allow_breaks: bool) -> None:
        spaces = breaks = False
        for i, c in enumerate(value):
            if c == " ":
                if allow_breaks and not spaces and self.column > BEST_WIDTH and value[i + 1] != " ":
                    self.write_indent()
                else:
                    self.put(c)
                spaces = True
            elif c in _BREAKS:
                if not breaks and c == "\n":
                    self.put_break()
                self.write_break(c)
                self.indention = breaks = True
            else:
                if breaks:
                    self.write_indent()
                self.put(c)
                self.indention = spaces = breaks = False

    def write_single(self, value: str, allow_breaks: bool) -> None:
        self.indicator("'", True, False, False)
        spaces = breaks = False
        last = len(value) - 1
        for i, c in enumerate(value):
            if c == " ":
                if (
                    allow_breaks and not spaces and self.column > BEST_WIDTH
                    and 0 < i < last and value[i + 1] != " "
                ):  # fmt: skip
                    self.write_indent()
                else:
                    self.put(c)
                spaces = True
            elif c in _BREAKS:
                if not breaks and c == "\n":
                    self.put_break()
                self.write_break(c)
                self.indention = breaks = True
            else:
                if breaks:
                    self.write_indent()
                if c == "'":
                    self.put("'")
                self.put(c)
                self.indention = spaces = breaks = False
        self.indicator("'", False, False, False)
        self.whitespace = self.indention = False

    def write_double(self, value: str, allow_breaks: bool) -> None:
        spaces = False
        self.indicator('"', True, False, False)
        bom = value.startswith("\ufeff")
        last = len(value) - 1
        for i, c in enumerate(value):
            if not _printable(c) or bom or c in _BREAKS or c in '"\\':
                code = ord(c)
                if code in _ESCAPES:
                    self.put("\\" + _ESCAPES[code])
                elif code <= 0xFF:
                    self.put(f"\\x{code:02X}")
                elif code <= 0xFFFF:
                    self.put(f"\\u{code:04X}")
                else:
                    self.put(f"\\U{code:08X}")
                spaces = False
            elif c == " ":
                if allow_breaks and not spaces and self.column > BEST_WIDTH and 0 < i < last:
                    self.write_indent()
                    if value[i + 1] == " ":
                        self.put("\\")
                else:
                    self.put(c)
                spaces = True
            else:
                self.put(c)
                spaces = False
        self.indicator('"', False, False, False)
        self.whitespace = self.indention = False

    def write_literal(self, value: str) -> None:
        self.indicator("|", True, False, False)
        if value[:1] == " " or (value[:1] in _BREAKS and value):
            self.indicator(str(BEST_INDENT), False, False, False)
        self.open_ended = False
        chomp = ""
        if not value or value[-1] not in _BREAKS:
            chomp = "-"
        elif len(value) == 1 or value[-2] in _BREAKS:
            chomp = "+"
        if chomp:  # the indicator clears open_ended again, as in yaml.v2
            self.indicator(chomp, False, False, False)
        self.put_break()
        self.indention = self.whitespace = True
        breaks = True
        for c in value:
            if c in _BREAKS:
                self.write_break(c)
                self.indention = breaks = True
            else:
                if breaks:
                    self.write_indent()
                self.put(c)
                self.indention = breaks = False
