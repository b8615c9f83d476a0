"""The rendered-config name's YAML emitter takes shortcuts for one-word ASCII scalars and
caches what repeats (key analysis, key order, key checks): each must answer exactly as the
character-by-character path of yaml.v2's emitter it stands for (issue 46: the render of
2,000 files spent most of its time analysing and writing data URLs one character at a time).
"""

from __future__ import annotations

import functools

from hypothesis import given
from hypothesis import strategies as st

from mcd.model.pool import goscalar
from mcd.model.pool.goyaml import _Analysis, _Emitter, _key_analysis, marshal

_INDICATORS = "-.?:,[]{}#&*!|>'\"%@` \t\n"
_WORDS = st.text(
    alphabet=st.sampled_from("abz09-._/=+;:,?[]{}#&*!|>'\"%@`~\\^$()<"), min_size=0, max_size=12
)
_ANY = st.one_of(
    _WORDS,
    st.text(max_size=12),
    st.text(alphabet=st.sampled_from(_INDICATORS + "ab\x85\u2028\x7f\x00"), max_size=8),
    st.sampled_from(["-", "---", "...", "---a", "...:", ":", "?", "a:", "a:b", "-a", "%a"]),
)


def _flags(a: _Analysis) -> tuple[bool, ...]:
    return (a.multiline, a.flow_plain, a.block_plain, a.single, a.block)


@given(_ANY)
def test_the_word_shortcut_analyses_as_each_character_would(value: str) -> None:
    assert _flags(_Analysis(value)) == _flags(_Analysis(value, fast=False))


def _plain(value: str, fast: bool, column: int, whitespace: bool) -> tuple[object, ...]:
    e = _Emitter()
    e.put("x" * column)
    e.whitespace = whitespace
    if fast:
        e.write_plain(value, True, False)
    else:
        if not e.whitespace:
            e.put(" ")
        e._plain_chars(value, True)
        e.whitespace = e.indention = False
    return "".join(e.out), e.column, e.whitespace, e.indention


@given(_ANY, st.integers(0, 100), st.booleans())
def test_a_plain_word_is_written_as_each_character_would_be(
    value: str, column: int, whitespace: bool
) -> None:
    if value.strip(" ") != value or not value:
        return  # (a plain scalar never starts or ends with a space: the analysis refuses it)
    assert _plain(value, True, column, whitespace) == _plain(value, False, column, whitespace)


@given(st.lists(st.one_of(_WORDS, st.text(max_size=6)), max_size=12, unique=True))
def test_cached_key_order_is_gos_insertion_sort(keys: list[str]) -> None:
    expected = list(keys)
    for i in range(1, len(expected)):
        j = i
        while j > 0 and goscalar.key_less(expected[j], expected[j - 1]):
            expected[j], expected[j - 1] = expected[j - 1], expected[j]
            j -= 1
    assert goscalar.sorted_keys(keys) == expected
    assert goscalar.sorted_keys(keys) == expected  # again, from the cache


@given(st.dictionaries(_ANY, st.one_of(_ANY, st.integers(), st.booleans()), max_size=6))
def test_a_document_twice_is_the_same_text(doc: dict[str, object]) -> None:
    """Once with empty caches, once from them: the same bytes."""
    goscalar._key.cache_clear()
    goscalar._sorted_few.cache_clear()
    try:
        first = marshal(goscalar.read_back(doc))
    except ValueError:
        return
    assert marshal(goscalar.read_back(doc)) == first


def test_the_caches_are_bounded() -> None:
    for cached in (goscalar._key, goscalar._sorted_few, _key_analysis):
        assert isinstance(cached, functools._lru_cache_wrapper)
        assert cached.cache_info().maxsize is not None
