"""A pool's history, rollback pin and prune rules (:mod:`mcd.model.pool.history`)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from mcd.model.pool.history import (
    HISTORY_ANNOTATION,
    KEEP,
    ROLLBACK_ANNOTATION,
    Pin,
    Revision,
    differ,
    encode_history,
    encode_pin,
    in_use,
    parse_history,
    parse_pin,
    pinned,
    prunable,
    record,
    source_hashes,
)

GEN = "machineconfiguration.openshift.io/generated-by-controller-version"
NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)


def test_a_config_targeted_again_gets_a_new_revision() -> None:
    h = record([], "r-a", "t1", "render", "first")
    h = record(h, "r-b", "t2", "render", "50-app added")
    assert record(h, "r-b", "t3", "render", "") == h  # the newest again: nothing changes
    h = record(h, "r-a", "t3", "mcd rollback (alice)", "rollback to revision 1")
    assert [(r.revision, r.config) for r in h] == [(2, "r-b"), (3, "r-a")]
    assert parse_history(encode_history(h)) == h


@given(st.lists(st.sampled_from([f"r-{i}" for i in range(15)]), max_size=60))
def test_the_history_is_bounded_numbered_and_has_each_config_once(configs: list[str]) -> None:
    h: list[Revision] = []
    for c in configs:
        h = record(h, c, "t", "by", "x" * 500)
    assert len(h) <= KEEP
    assert len({r.config for r in h}) == len(h)
    numbers = [r.revision for r in h]
    assert numbers == sorted(set(numbers))
    if configs:
        assert h[-1].config == configs[-1]
    assert len(encode_history(h)) < 6000
    assert all(len(r.change) <= 300 for r in h)


@given(st.text(max_size=300))
def test_any_annotation_text_is_a_history_or_none(text: str) -> None:
    for r in parse_history(text):
        assert isinstance(r.revision, int) and isinstance(r.config, str)
    assert parse_pin(text) is None or isinstance(parse_pin(text), Pin)


def test_which_machineconfigs_differ() -> None:
    a = source_hashes([{"metadata": {"name": "00-worker"}, "spec": {"x": 1}},
                       {"metadata": {"name": "50-app"}, "spec": {"y": 1}}])  # fmt: skip
    b = source_hashes([{"metadata": {"name": "00-worker"}, "spec": {"x": 2}},
                       {"metadata": {"name": "60-fix"}, "spec": {}}])  # fmt: skip
    assert differ(a, b) == ["00-worker changed", "50-app removed", "60-fix added"]
    assert differ(a, a) == []
    assert differ(None, b)[0].startswith("unknown")


def test_a_pin_holds_only_while_the_machineconfigs_render_the_same() -> None:
    pin = parse_pin(encode_pin(Pin("r-old", "r-new")))
    assert pin == Pin("r-old", "r-new")
    assert pinned(pin, "r-new")
    assert not pinned(pin, "r-fixed")  # a MachineConfig changed: the rollback is over
    assert not pinned(None, "r-new")


def rendered(name: str, age: timedelta) -> dict[str, object]:
    created = (NOW - age).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"metadata": {"name": name, "creationTimestamp": created, "annotations": {GEN: "v"}}}


def test_prune_keeps_whatever_a_node_a_pool_a_pin_or_a_revision_uses() -> None:
    day = timedelta(days=1)
    names = ("target", "status", "node", "desired", "rev", "pin", "old", "")
    configs = [rendered(f"rendered-w-{n}".rstrip("-"), 2 * day) for n in names]
    configs.append(rendered("user-w-old", 2 * day))  # mcd's mark, not a rendered name
    configs += [rendered("rendered-w-young", timedelta(minutes=5)),
                {"metadata": {"name": "00-user", "creationTimestamp": "2020-01-01T00:00:00Z"}}]  # fmt: skip
    pool = {
        "metadata": {"annotations": {
            HISTORY_ANNOTATION: json.dumps([{"revision": 4, "config": "rendered-w-rev"}]),
            ROLLBACK_ANNOTATION: encode_pin(Pin("rendered-w-pin", "rendered-w-target"))}},
        "spec": {"configuration": {"name": "rendered-w-target"}},
        "status": {"configuration": {"name": "rendered-w-status"}},
    }  # fmt: skip
    nodes = [{"metadata": {"annotations": {"cur": "rendered-w-node",
                                           "des": "rendered-w-desired"}}}]  # fmt: skip
    used = in_use([pool], nodes, ("cur", "des"))
    assert prunable(configs, used, NOW, day, GEN) == ["rendered-w", "rendered-w-old"]
