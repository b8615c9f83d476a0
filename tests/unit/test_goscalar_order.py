"""Map keys in yaml.v2's order past Go's insertion-sort cut-off (more than 12 keys).

Go's ``sort.Sort`` insertion-sorts up to 12 elements and pdqsorts above; for distinct keys
under a strict order both give the one sorted order, so a long map must come out exactly as
an insertion sort by ``key_less`` would put it.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mcd.model.pool.goscalar import key_less, sorted_keys
from mcd.model.pool.goyaml import marshal


def insertion_sorted(keys: list[str]) -> list[str]:
    out: list[str] = []
    for key in keys:
        at = len(out)
        while at > 0 and key_less(key, out[at - 1]):
            at -= 1
        out.insert(at, key)
    return out


# letters and short digit runs without leading zeros: key_less is a strict order on them
_KEYS = st.lists(
    st.from_regex(r"[a-z]{1,3}([1-9][0-9]?)?", fullmatch=True), min_size=13, max_size=40,
    unique=True,
)  # fmt: skip


@given(_KEYS)
def test_a_long_map_is_ordered_as_a_short_one_would_be(keys: list[str]) -> None:
    assert sorted_keys(keys) == insertion_sorted(keys)
    assert sorted_keys(list(reversed(keys))) == insertion_sorted(keys)


def test_numbers_inside_keys_compare_by_value_in_a_long_map() -> None:
    keys = [f"item{n}" for n in (10, 2, 33, 1, 100, 20, 3, 11, 5, 7, 40, 9, 8, 4)]
    assert sorted_keys(keys) == [
        f"item{n}" for n in (1, 2, 3, 4, 5, 7, 8, 9, 10, 11, 20, 33, 40, 100)
    ]
    letters = list("zyxwvutsrqponm")
    assert sorted_keys(letters) == sorted(letters)
    text = marshal(dict.fromkeys(reversed(keys), 0))
    assert [line.split(":")[0] for line in text.splitlines()] == sorted_keys(keys)
