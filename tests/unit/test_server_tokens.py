"""Join tokens, pure: issue, parse, judge (hash compared, expiry, uses, pool), the old
label domain read."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from mcd.server.tokens import (
    MAX_USES,
    USED,
    Grant,
    Refused,
    describe,
    issue,
    judge,
    token_from,
    use_record,
    with_use,
)

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


def _used(secret: dict[str, Any], times: int) -> dict[str, Any]:
    for n in range(times):
        grant = Grant("id", "", secret, f"use{n}", "worker")
        secret = with_use(
            secret, grant, use_record(f"10.0.0.{n}:5", "Ignition/2", "r-1", "3.3.0", NOW)
        )
    return secret


def test_a_pool_token_serves_up_to_its_uses_then_refuses() -> None:
    issued = issue("", "worker", timedelta(hours=1), NOW, uses=3)
    assert judge(issued.secret, issued.token, "worker", NOW) == ""  # no node named
    twice = _used(issued.secret, 2)
    assert judge(twice, issued.token, "worker", NOW) == ""
    info = describe(twice, {f"{issued.token_id}.use1": "node-b"})
    assert (len(info.uses), info.remaining, info.used) == (2, 1, False)
    assert [u.get("node", "") for u in info.uses] == ["", "node-b"]
    assert info.used_from == "10.0.0.1:5"
    thrice = _used(issued.secret, 3)
    assert thrice["metadata"]["annotations"][USED] == "true"
    with pytest.raises(Refused, match=r"used up \(3 uses\)"):
        judge(thrice, issued.token, "worker", NOW)
    assert describe(thrice).remaining == 0


@pytest.mark.parametrize(("node", "uses"), [("node-a", 2), ("", 0), ("", MAX_USES + 1)])
def test_uses_bounds(node: str, uses: int) -> None:
    with pytest.raises(ValueError, match="uses"):
        issue(node, "worker", timedelta(hours=1), NOW, uses=uses)


def test_secrets_in_the_old_label_domain_are_still_read() -> None:
    """A Secret written before the move to mcd-project.github.io/: type, label and use
    annotations in mcd.openshift.io/."""
    issued = issue("node-a", "worker", timedelta(hours=1), NOW)
    old = {**issued.secret, "type": "mcd.openshift.io/join-token",
           "metadata": {**issued.secret["metadata"],
                        "labels": {"mcd.openshift.io/join-token": "true"}}}  # fmt: skip
    assert issued.secret["type"] == "mcd-project.github.io/join-token"
    assert issued.secret["metadata"]["labels"] == {"mcd-project.github.io/join-token": "true"}
    assert judge(old, issued.token, "worker", NOW) == "node-a"
    used = {**old, "metadata": {**old["metadata"], "annotations": {
        "mcd.openshift.io/used": "true", "mcd.openshift.io/used-from": "10.1.1.1:4"}}}  # fmt: skip
    with pytest.raises(Refused, match="already used"):
        judge(used, issued.token, "worker", NOW)
    info = describe(used)
    assert info.used and info.used_from == "10.1.1.1:4" and info.uses[0]["node"] == "node-a"
