"""The remembered ``data:`` headers (issue 46): a URL whose header the grammar accepted
before is read exactly as a fresh walk of the grammar reads it (pure, hypothesis)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcd.model.errors import DecodeError
from mcd.model.ignition import dataurl_lex
from mcd.model.ignition.dataurl import decode_data_url

HEADER_PIECES = [
    "data:", ";base64", ";", ",", "=", '"', "\\", "x", "x-", "X", "-", "/", "text", "plain",
    "charset", "utf-8", "base64", "a", " ", "é", "%2", "%zz", "#", "\n",
]  # fmt: skip
PAYLOAD = st.text(alphabet="YWI=+/,;ab%20 \n\u00e9#", max_size=12)
HEADER = st.lists(st.sampled_from(HEADER_PIECES), max_size=8).map("".join)
URL = st.builds(
    lambda h, p, data: ("data:" if data else "") + h + p, HEADER, PAYLOAD, st.booleans()
)


@contextmanager
def nothing_remembered() -> Iterator[None]:
    saved = dict(dataurl_lex._ACCEPTED)
    dataurl_lex._ACCEPTED.clear()
    try:
        yield
    finally:
        dataurl_lex._ACCEPTED.clear()
        dataurl_lex._ACCEPTED.update(saved)


def outcome(read: object, url: str) -> object:
    assert callable(read)
    try:
        return read(url)
    except DecodeError as e:
        return ("refused", str(e))


def fresh(read: object, url: str) -> object:
    with nothing_remembered():
        return outcome(read, url)


@settings(max_examples=400, deadline=None)
@given(st.lists(URL, min_size=1, max_size=6))
def test_a_remembered_header_reads_as_a_fresh_walk(urls: list[str]) -> None:
    # each URL read after the ones before it (their headers remembered) and alone
    with nothing_remembered():
        for url in urls + [u[::-1] for u in urls] + urls:
            assert outcome(dataurl_lex.split, url) == fresh(dataurl_lex.split, url)
            assert outcome(decode_data_url, url) == fresh(decode_data_url, url)


@pytest.mark.parametrize(
    ("first", "then", "expected"),
    [
        ("data:;base64,YWI=", "data:;base64,YWJj", (True, "YWJj")),
        ("data:,a", "data:,b,c", (False, "b,c")),
        ('data:text/plain;a="b,c",x', 'data:text/plain;a="b,d",x', (False, "x")),
        ('data:text/plain;a="b,c",x', 'data:text/plain;a="b,c,d', "unclosed quoted string"),
        ("data:;base64,YWI=", "data:;base64;,x", "invalid character for parameter attribute"),
    ],
)
def test_what_follows_a_remembered_header(first: str, then: str, expected: object) -> None:
    with nothing_remembered():
        dataurl_lex.split(first)
        got = outcome(dataurl_lex.split, then)
    assert got == (("refused", expected) if isinstance(expected, str) else expected)


def test_the_remembered_headers_stay_few() -> None:
    with nothing_remembered():
        for i in range(500):
            dataurl_lex.split(f"data:text/plain;n={i};base64,YWI=")
        dataurl_lex.split("data:text/plain;v=" + "a" * 1000 + ",x")
        assert len(dataurl_lex._ACCEPTED) <= 64
        assert all(len(h) <= 256 for h in dataurl_lex._ACCEPTED)


def test_a_non_ascii_base64_payload_is_refused_in_the_librarys_words() -> None:
    with pytest.raises(DecodeError, match=r"^invalid data character$"):
        decode_data_url("data:;base64,YW\u00e9I")
