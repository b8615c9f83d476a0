"""Spec 2.2 duplicates folded as upstream's removeIgnDuplicateFilesUnitsUsers folds them."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcd.model.ignition.v2dedupe import DuplicateUserError, fold_v2_duplicates


def v2(**sections: Any) -> dict[str, Any]:
    return {"ignition": {"version": "2.2.0"}, **sections}


def test_the_last_file_for_a_path_wins_and_the_survivors_come_out_reversed() -> None:
    doc = v2(storage={"files": [
        {"path": "/etc/a", "contents": {"source": "data:,1"}},
        {"path": "/etc/b", "contents": {"source": "data:,2"}},
        {"path": "/etc/a", "contents": {"source": "data:,3"}},
    ]})  # fmt: skip
    before = copy.deepcopy(doc)
    assert fold_v2_duplicates(doc)["storage"]["files"] == [
        {"path": "/etc/a", "contents": {"source": "data:,3"}},
        {"path": "/etc/b", "contents": {"source": "data:,2"}},
    ]
    assert doc == before  # the input is not changed


def test_a_units_earlier_duplicates_give_it_their_other_dropins() -> None:
    doc = v2(systemd={"units": [
        {"name": "u.service", "dropins": [{"name": "a.conf", "contents": "old"}, {"name": "c.conf"}]},
        {"name": "v.service"},
        {"name": "u.service", "contents": "[Unit]", "dropins": [{"name": "a.conf", "contents": "new"}]},
    ]})  # fmt: skip
    assert fold_v2_duplicates(doc)["systemd"]["units"] == [
        {"name": "u.service", "contents": "[Unit]",
         "dropins": [{"name": "a.conf", "contents": "new"}, {"name": "c.conf"}]},
        {"name": "v.service"},
    ]  # fmt: skip


def test_users_fold_into_the_last_with_every_key_once() -> None:
    doc = v2(passwd={"users": [
        {"name": "core", "sshAuthorizedKeys": ["k1", "k2"], "passwordHash": "$6$first"},
        {"name": "core", "sshAuthorizedKeys": ["k3", "k1"]},
    ]})  # fmt: skip
    assert fold_v2_duplicates(doc)["passwd"]["users"] == [
        {"name": "core", "sshAuthorizedKeys": ["k3", "k1", "k2"]}
    ]


@pytest.mark.parametrize("names", [["other"], ["core", "other"], ["other", "core"]])
def test_a_user_other_than_core_is_refused_with_upstreams_text(names: list[str]) -> None:
    doc = v2(passwd={"users": [{"name": n} for n in names]})
    with pytest.raises(DuplicateUserError, match=r"unexpected user with name: other\. Only core"):
        fold_v2_duplicates(doc)


@settings(max_examples=200)
@given(st.lists(st.tuples(st.sampled_from(["/a", "/b", "/c", "/d"]), st.integers(0, 9))))
def test_each_path_keeps_its_last_entry_in_reverse_order_of_those(entries: list[Any]) -> None:
    doc = v2(storage={"files": [{"path": p, "mode": m} for p, m in entries]})
    files = fold_v2_duplicates(doc)["storage"]["files"]
    last = {p: (i, m) for i, (p, m) in enumerate(entries)}
    assert [f["path"] for f in files] == sorted(last, key=lambda p: -last[p][0])
    assert all(f["mode"] == last[f["path"]][1] for f in files)
