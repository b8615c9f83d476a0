"""Memos of the update's hot path: each file decoded once per update (never across updates),
each config validated once, each policy path cleaned once. Each returns what the plain
computation returns."""

from __future__ import annotations

import dataclasses
from urllib.parse import quote_from_bytes

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcd.model.disruption.policy import (
    DisruptionPolicies,
    FilePolicy,
    gopath_clean,
    is_subdirectory,
)
from mcd.model.errors import DecodeError
from mcd.model.ignition import validate
from mcd.model.ignition.config import Contents, File, IgnitionConfig, decoding_once
from mcd.model.ignition.dataurl import encode_data_url

COMPRESSED = st.booleans()


def _contents(data: bytes, gzip: bool, percent: bool) -> Contents:
    if percent and not gzip:
        return Contents("data:," + quote_from_bytes(data))
    return Contents(encode_data_url(data, compress=gzip), "gzip" if gzip else "")


@given(data=st.binary(max_size=2048), gzip=COMPRESSED, percent=st.booleans())
def test_decoded_once_equals_decoded_every_time(data: bytes, gzip: bool, percent: bool) -> None:
    contents = _contents(data, gzip, percent)
    plain = contents.decode()
    with decoding_once():
        first = contents.decode()
        # an equal entry parsed anew (another config's copy) is served the same bytes
        again = dataclasses.replace(contents, source=str(contents.source)).decode()
    assert first == again == plain == data


@given(
    old=st.binary(min_size=1, max_size=512),
    new=st.binary(min_size=1, max_size=512),
    gzip=COMPRESSED,
)
def test_never_stale_across_updates(old: bytes, new: bytes, gzip: bool) -> None:
    """The same path with other contents in the next update decodes to the new bytes, and
    nothing decoded is kept once the update's block ends."""
    path = "/etc/app.conf"
    first = File(path, _contents(old, gzip, False))
    second = File(path, _contents(new, gzip, False))
    with decoding_once():
        assert first.data() == old
    with decoding_once():
        assert second.data() == new
        assert first.data() == old  # both kinds in one update: each its own bytes
    assert second.data() == new


def test_the_block_keeps_within_its_limit_and_errors_are_not_kept() -> None:
    big = Contents(encode_data_url(b"x" * 1000))
    bad = Contents("data:;base64,!!!")
    with decoding_once(limit=1500):
        assert big.decode() == b"x" * 1000
        other = Contents(encode_data_url(b"y" * 1000))  # past the limit: decoded, not kept
        assert other.decode() == b"y" * 1000
        for _ in range(2):
            with pytest.raises(DecodeError):
                bad.decode()
        with decoding_once():  # nested: the outer block's memo
            assert big.decode() == b"x" * 1000


@given(
    paths=st.lists(
        st.sampled_from(["/etc/a", "/etc/a/b", "/etc/../etc/x", "etc/c", "/tmp/z", "//etc/a/"]),
        max_size=5,
    ),
)
def test_validation_memo_equals_a_fresh_validation(paths: list[str]) -> None:
    cfg = IgnitionConfig(files=tuple(File(p, Contents(encode_data_url(b"1"))) for p in paths))
    fresh = dataclasses.replace(cfg)  # a new object: nothing remembered
    assert not fresh.memo
    found = validate.problems(cfg, "spec.config")
    assert found == validate.problems(cfg, "spec.config") == validate.problems(fresh, "spec.config")
    found.append("changed by a caller")  # the memo is not the caller's list
    assert validate.problems(cfg, "spec.config") == validate.problems(fresh, "spec.config")
    assert validate.problems(cfg) == validate.problems(dataclasses.replace(cfg))


PARTS = st.sampled_from(["etc", "a", "b", ".", "..", "", "crio"])


@given(
    policies=st.lists(st.lists(PARTS, min_size=1, max_size=4).map("/".join), max_size=6),
    target=st.lists(PARTS, min_size=1, max_size=5).map("/".join),
)
def test_closest_policy_as_upstream_spelled_out(policies: list[str], target: str) -> None:
    """The cleaned-once prefixes choose as ``IsSubdirectory`` over every policy does."""
    found = DisruptionPolicies(files=tuple(FilePolicy(p, ()) for p in policies))
    best: FilePolicy | None = None
    for policy in found.files:
        if (target == policy.path or is_subdirectory(policy.path, target)) and (
            best is None or len(policy.path) > len(best.path)
        ):
            best = policy
    assert found.closest_file_policy(target) is best
    assert gopath_clean(target)  # never empty
