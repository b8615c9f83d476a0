"""Text shown to people (plan, diff, reasons) is one terminal-safe line: every character that
is not printable is written as the escape Python and Go read back."""

from __future__ import annotations

import codecs

from hypothesis import given
from hypothesis import strategies as st

from mcd.model.text import gooctal, printable

NOT_PRINTABLE = ["\x00", "\x1b", "\x7f", "\x85", "\xa0", "\u2028", "\ufeff", "\U000e0001"]


def test_control_characters_become_escapes() -> None:
    assert printable("a\nb\tc\rd") == "a\\nb\\tc\\rd"
    assert printable("\x1b[31mred") == "\\x1b[31mred"
    assert printable("nul\x00") == "nul\\x00"


def test_unicode_that_is_not_printable_is_escaped_by_its_width() -> None:
    assert printable("\x1b") == "\\x1b"  # ASCII control: two hex digits, as Go's strconv.Quote
    assert printable("\xa0") == "\\u00a0"  # from 0x80: four, as Go (not Python's \xa0)
    assert printable("line\u2028sep") == "line\\u2028sep"  # four
    assert printable("tag\U000e0001") == "tag\\U000e0001"  # eight
    assert printable("caf\xe9 \u65e5\u672c") == "caf\xe9 \u65e5\u672c"  # printable: as is


def test_kept_characters_stay_as_they_are() -> None:
    assert printable("a\tb\nc", "\t") == "a\tb\\nc"


@given(
    st.text(st.characters(codec="ascii", exclude_characters="\\") | st.sampled_from(NOT_PRINTABLE))
)
def test_the_escaped_line_is_printable_and_reads_back(s: str) -> None:
    shown = printable(s)
    assert shown.isprintable()
    assert codecs.decode(shown.encode("ascii"), "unicode_escape") == s


def test_modes_are_shown_as_go_shows_them() -> None:
    assert gooctal(0o644) == "0644"
    assert gooctal(0o4777) == "04777"
    assert gooctal(0) == "0"
    assert gooctal(-0o10) == "-010"
