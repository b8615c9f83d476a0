"""Join tokens, pure: issue, parse, judge (hash compared, expiry, use, pool)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from mcd.server.tokens import USED, Refused, issue, judge, token_from

NOW = datetime(2026, 11, 26, 7, 0, tzinfo=UTC)


def test_the_secret_keeps_the_hash_never_the_token() -> None:
    issued = issue("node-a", "worker", timedelta(hours=1), NOW)
    assert issued.token.startswith(f"mcdjt.{issued.token_id}.")
    assert issued.token not in str(issued.secret)
    assert issued.token.split(".")[2] not in str(issued.secret)
    assert issued.secret["metadata"]["name"] == f"mcd-join-{issued.token_id}"
    assert judge(issued.secret, issued.token, "worker", NOW) == "node-a"


def test_two_tokens_differ() -> None:
    a, b = (issue("n", "worker", timedelta(hours=1), NOW) for _ in range(2))
    assert a.token != b.token and a.token_id != b.token_id


@pytest.mark.parametrize("ttl", [timedelta(0), timedelta(seconds=-1), timedelta(days=8)])
def test_ttl_bounds(ttl: timedelta) -> None:
    with pytest.raises(ValueError, match="ttl"):
        issue("n", "worker", ttl, NOW)


def test_judge_refuses_every_bad_case() -> None:
    issued = issue("node-a", "worker", timedelta(hours=1), NOW)
    secret, token = issued.secret, issued.token
    with pytest.raises(Refused, match="wrong token"):
        judge(secret, token[:-1] + ("A" if token[-1] != "A" else "B"), "worker", NOW)
    with pytest.raises(Refused, match="another pool"):
        judge(secret, token, "master", NOW)
    with pytest.raises(Refused, match="expired"):
        judge(secret, token, "worker", NOW + timedelta(hours=1))
    used = {**secret, "metadata": {**secret["metadata"], "annotations": {USED: "true"}}}
    with pytest.raises(Refused, match="already used"):
        judge(used, token, "worker", NOW)
    with pytest.raises(Refused, match="not a join token"):
        judge({**secret, "type": "Opaque"}, token, "worker", NOW)
    broken = {**secret, "data": {**secret["data"], "expires": "bm9wZQ=="}}
    with pytest.raises(Refused, match="expiry"):
        judge(broken, token, "worker", NOW)


@pytest.mark.parametrize(
    "header",
    [None, "", "Bearer", "Basic abc", "Bearer mcdjt.0.x", "Bearer mcdjt.0123456789abcdef." + "A" * 42,
     "Bearer mcdjt.0123456789ABCDEF." + "A" * 43, "Bearer mcdjt.0123456789abcdef." + "A" * 43 + "\x00"],
)  # fmt: skip
def test_malformed_headers(header: str | None) -> None:
    assert token_from(header) is None


def test_header_parsing() -> None:
    token = "mcdjt.0123456789abcdef." + "A" * 43
    assert token_from(f"Bearer {token}") == ("0123456789abcdef", token)
    assert token_from(f"bearer  {token} ") == ("0123456789abcdef", token)
