"""A pool's history, sources and prune at their edges (model/pool/history): what an
annotation written earlier reads back as, the stable hash two controllers compare, the
bounds of each field, and which configs a prune may take."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from mcd.model.pool.history import (
    MAX_TEXT,
    SOURCES_ANNOTATION,
    Pin,
    Revision,
    encode_history,
    encode_pin,
    in_use,
    parse_history,
    parse_pin,
    parse_sources,
    prunable,
    record,
    source_hashes,
)

GEN = "machineconfiguration.openshift.io/generated-by-controller-version"
NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)


def test_a_history_reads_every_readable_entry_and_skips_the_rest() -> None:
    text = json.dumps([
        "junk",
        {"revision": 3, "config": "rendered-c"},
        {"revision": True, "config": "rendered-bool"},
        {"revision": "4", "config": "rendered-str"},
        {"revision": 5},
        {"revision": 1, "config": "rendered-a", "time": "t1", "by": "render", "change": "x"},
    ])  # fmt: skip
    assert parse_history(text) == [
        Revision(1, "rendered-a", "t1", "render", "x"),
        Revision(3, "rendered-c", "", "", ""),
    ]


def test_a_histories_fields_are_cut_to_their_bounds() -> None:
    text = json.dumps(
        [
            {
                "revision": 1,
                "config": "c" * 300,
                "time": "t" * 50,
                "by": "b" * 150,
                "change": "x" * 400,
            }
        ]
    )
    [r] = parse_history(text)
    assert (len(r.config), len(r.time), len(r.by), len(r.change)) == (253, 40, 100, 300)


def test_an_annotation_past_the_size_bound_is_not_read() -> None:
    small = json.dumps([{"revision": 1, "config": "rendered-a"}])
    exact = small + " " * (MAX_TEXT - len(small))
    assert parse_history(exact) == [Revision(1, "rendered-a", "", "", "")]
    assert parse_history(exact + " ") == []
    assert parse_pin(encode_pin(Pin("a", "b")) + " " * MAX_TEXT) is None


def test_the_history_annotation_is_compact_json() -> None:
    assert encode_history([Revision(1, "rendered-a", "t", "me", "c")]) == (
        '[{"revision":1,"config":"rendered-a","time":"t","by":"me","change":"c"}]'
    )
    assert encode_pin(Pin("rendered-a", "rendered-b")) == (
        '{"config":"rendered-a","rendered":"rendered-b"}'
    )


@pytest.mark.parametrize(("size", "kept"), [(300, 300), (301, 300), (299, 299)])
def test_a_long_change_is_cut_with_an_ellipsis(size: int, kept: int) -> None:
    [r] = record([], "rendered-a", "t", "by", "x" * size)
    assert len(r.change) == kept
    assert r.change.endswith("...") is (size > 300)


def test_a_specs_hash_is_stable_across_key_order_and_controllers() -> None:
    spec = {"b": [1, 2], "a": {"y": 1, "x": "z"}}
    hashes = source_hashes([{"metadata": {"name": "99-x"}, "spec": spec}, {"spec": {}}])
    # written by an earlier controller: a later one must compute the same
    assert hashes == {"99-x": "6a75b6a27de9", "": "44136fa355b3"}
    reordered = {"a": {"x": "z", "y": 1}, "b": [1, 2]}
    assert source_hashes([{"metadata": {"name": "99-x"}, "spec": reordered}]) == {
        "99-x": "6a75b6a27de9"
    }


def annotated(value: Any) -> dict[str, Any]:
    return {"metadata": {"annotations": {SOURCES_ANNOTATION: value}}}


def test_a_rendered_configs_sources_read_back_or_are_unknown() -> None:
    assert parse_sources(annotated('{"00-worker": "abc", "7": 1}')) == {
        "00-worker": "abc",
        "7": "1",
    }
    assert parse_sources(annotated("[1]")) is None
    assert parse_sources(annotated(None)) is None
    assert parse_sources({"metadata": {}}) is None
    assert parse_sources(None) is None


@pytest.mark.parametrize(
    "text",
    ['{"config": "", "rendered": "b"}', '{"config": "a"}', '{"rendered": "b"}',
     '{"config": "a", "rendered": 1}', '{"config": 1, "rendered": "b"}', '["a", "b"]', None],
)  # fmt: skip
def test_a_pin_without_both_configs_is_no_pin(text: str | None) -> None:
    assert parse_pin(text) is None


def test_a_pin_to_an_empty_render_still_pins_its_config() -> None:
    assert parse_pin('{"config": "a", "rendered": ""}') == Pin("a", "")


def test_a_pools_target_and_status_are_both_in_use() -> None:
    pool = {"spec": {"configuration": {"name": "rendered-t"}},
            "status": {"configuration": {"name": "rendered-s"}}}  # fmt: skip
    assert in_use([pool], [], ()) == {"rendered-t", "rendered-s"}
    assert in_use([{"spec": {"configuration": {"name": "rendered-t"}}}], [], ()) == {"rendered-t"}


def config(name: str, created: object, gen: bool = True) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "creationTimestamp": created}
    if gen:
        meta["annotations"] = {GEN: "v"}
    return {"metadata": meta}


def test_prune_takes_configs_exactly_grace_old_and_keeps_unreadable_times() -> None:
    grace = timedelta(hours=24)
    configs = [
        config("rendered-bad-time", "yesterday"),
        config("rendered-no-time", None),
        config("rendered-naive", "2026-11-20T00:00:00"),
        config("rendered-exact", "2026-11-25T12:00:00Z"),
        config("rendered-young", "2026-11-25T12:00:01Z"),
        config("rendered-lower-z", "2026-11-20T00:00:00z"),
        config("rendered-hand-made", "2026-11-20T00:00:00Z", gen=False),
        config("rendered-old", "2026-11-20T00:00:00+00:00"),
    ]
    assert prunable(configs, set(), NOW, grace, GEN) == ["rendered-exact", "rendered-old"]
