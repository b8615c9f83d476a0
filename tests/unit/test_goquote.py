"""``goquote``: Go's ``%q`` for the log lines that name a path (one per written file)."""

from __future__ import annotations

import ast

from hypothesis import given
from hypothesis import strategies as st

from mcd.model.text import goquote, printable


@given(st.text())
def test_goquote_is_one_printable_line_that_reads_back_as_the_text(s: str) -> None:
    """Go's escapes are a subset of Python's: a quoted text is a Python literal of itself;
    whatever it holds (newlines, escapes, NUL, line separators), the quote is one line of
    printable characters, and the fast path for plain paths agrees with the general one."""
    quoted = goquote(s)
    assert ast.literal_eval(quoted) == s
    assert quoted.isprintable()
    assert printable(s).isprintable()
    if '"' not in s and "\\" not in s:  # the same escapes, quoted or not
        assert quoted == f'"{printable(s)}"'


def test_plain_and_awkward_paths_are_quoted_as_go_prints_them() -> None:
    assert goquote("/etc/bench/d1/f1.conf") == '"/etc/bench/d1/f1.conf"'
    assert goquote('/etc/a"b') == '"/etc/a\\"b"'
    assert goquote("/etc/a\\b") == '"/etc/a\\\\b"'
    assert goquote("/etc/a\nb") == '"/etc/a\\nb"'


def test_control_characters_are_escaped_as_go_does() -> None:
    assert goquote("a\x1b[31mb") == '"a\\x1b[31mb"'
    assert goquote("\x00\x7f\u0085\u2028") == '"\\x00\\x7f\\u0085\\u2028"'
    assert printable("two\nlines\r") == "two\\nlines\\r"
