"""A pool's drain timeout annotation at its bounds (model/drain/settings), and Go's path
cleaning for disruption policy paths (model/disruption/policy)."""

from __future__ import annotations

import pytest

from mcd.model.disruption.policy import gopath_clean
from mcd.model.drain.settings import (
    DRAIN_TIMEOUT_ANNOTATION,
    DrainSettings,
    drain_settings,
    parse_timeout,
)

EXPECTED = "expected a duration such as 90m, 2h or 1h30m, got "


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("1s", 1.0), (" 90m ", 5400.0), ("7d", 604800.0), ("1d2h3m4s", 93784.0),
     ("6d23h59m60s", 604800.0)],
)  # fmt: skip
def test_timeouts_up_to_seven_days(value: str, seconds: float) -> None:
    assert parse_timeout(value) == seconds


@pytest.mark.parametrize(
    ("value", "message"),
    [("7d1s", "must be more than 0 and at most 7 days, got '7d1s'"),
     ("0s", "must be more than 0 and at most 7 days, got '0s'"),
     ("x" * 64, EXPECTED + "'" + "x" * 59 + "...'"),
     ("y" * 62, EXPECTED + "'" + "y" * 62 + "'"),
     ("90m" + " " * 62, EXPECTED + repr("90m" + " " * 62)[:60] + "...'"),
     ("90m" + " " * 61, None),
     (5, EXPECTED + "5"), ("", EXPECTED + "''"), ("m", EXPECTED + "'m'")],
)  # fmt: skip
def test_a_timeout_out_of_bounds_says_why_and_quotes_it_short(
    value: object, message: str | None
) -> None:
    if message is None:
        assert parse_timeout(value) == 5400.0
        return
    with pytest.raises(ValueError) as e:
        parse_timeout(value)
    assert str(e.value) == message


def test_the_pool_default_applies_without_the_annotation_or_when_it_is_bad() -> None:
    assert drain_settings({}) == DrainSettings(3600.0, False, "")
    assert drain_settings({DRAIN_TIMEOUT_ANNOTATION: "2h"}) == DrainSettings(7200.0, True, "")
    assert drain_settings({DRAIN_TIMEOUT_ANNOTATION: "bad"}) == DrainSettings(
        3600.0, True,
        f"annotation {DRAIN_TIMEOUT_ANNOTATION}: {EXPECTED}'bad'; the default 1h0m0s applies",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("path", "clean"),
    [("", "."), ("//etc//a/", "/etc/a"), ("///x", "/x"), ("/etc/../a", "/a"), ("a/./b", "a/b"),
     ("//", "/")],
)  # fmt: skip
def test_policy_paths_are_cleaned_as_go_cleans_them(path: str, clean: str) -> None:
    assert gopath_clean(path) == clean
