"""Which pool a node belongs to and how many may update at once, as upstream's node controller
reads pools: label selector semantics, a pool selecting every node ignored, master over any
custom pool over worker, and ``maxUnavailable`` scaled and refused in the API's words."""

from __future__ import annotations

from typing import Any

import pytest

from mcd.model.pool.pools import (
    SelectorError,
    max_unavailable,
    primary_pool,
    selector_matches,
    selects_all,
)

ROLE = "node-role.kubernetes.io/"


def pool(name: str, selector: dict[str, Any] | None) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"nodeSelector": selector}}


def node(**labels: str) -> dict[str, Any]:
    return {"metadata": {"name": "n1", "labels": labels}}


def role(name: str) -> dict[str, Any]:
    return {"matchLabels": {ROLE + name: ""}}


def name(found: Any) -> str | None:
    return None if found is None else str(found["metadata"]["name"])


@pytest.mark.parametrize(
    ("selector", "labels", "matches"),
    [
        ({"matchLabels": {"a": "1"}}, {"a": "1", "b": "2"}, True),
        ({"matchLabels": {"a": "1"}}, {"a": "2"}, False),
        ({"matchLabels": {"a": "1"}}, {}, False),
        ({"matchExpressions": [{"key": "a", "operator": "In", "values": ["1"]}]}, {}, False),
        ({"matchExpressions": [{"key": "a", "operator": "In", "values": ["1"]}]}, {"a": "3"}, False),
        ({"matchExpressions": [{"key": "a", "operator": "In"}]}, {"a": ""}, False),
        ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}, {"a": "2"}, True),
        ({"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {"a": ""}, True),
        ({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, {"a": ""}, False),
        ({"matchLabels": {"a": "1"},
          "matchExpressions": [{"key": "b", "operator": "Exists"}]}, {"a": "1"}, False),
        ({"matchExpressions": [{"key": "a", "operator": "Exists"},
                               {"key": "b", "operator": "DoesNotExist"}]}, {"a": "1"}, True),
    ],
)  # fmt: skip
def test_label_selectors(selector: dict[str, Any], labels: dict[str, str], matches: bool) -> None:
    assert selector_matches(selector, labels) is matches


def test_an_unknown_operator_is_refused_in_the_apis_words() -> None:
    with pytest.raises(SelectorError) as e:
        selector_matches({"matchExpressions": [{"key": "a", "operator": "Gt"}]}, {"a": "1"})
    assert str(e.value) == '"Gt" is not a valid label selector operator'


def test_only_an_empty_selector_selects_all() -> None:
    assert selects_all({}) and selects_all({"matchLabels": {}, "matchExpressions": []})
    assert not selects_all(None)
    assert not selects_all({"matchLabels": {"a": "1"}})
    assert not selects_all({"matchExpressions": [{"key": "a", "operator": "Exists"}]})


def test_a_pool_selecting_every_node_is_ignored() -> None:
    pools = [pool("everything", {}), pool("worker", role("worker"))]
    assert name(primary_pool(node(**{ROLE + "worker": ""}), pools)) == "worker"
    assert primary_pool(node(other="x"), pools) is None


def test_master_wins_over_custom_and_custom_over_worker_in_any_order() -> None:
    pools = [pool("infra", role("infra")), pool("master", role("master")),
             pool("worker", role("worker"))]  # fmt: skip
    labels = {ROLE + "master": "", ROLE + "infra": "", ROLE + "worker": ""}
    assert name(primary_pool(node(**labels), pools)) == "master"
    assert name(primary_pool(node(**labels), pools[::-1])) == "master"
    no_master = {ROLE + "infra": "", ROLE + "worker": ""}
    assert name(primary_pool(node(**no_master), pools)) == "infra"
    assert name(primary_pool(node(**no_master), pools[::-1])) == "infra"


def test_two_custom_pools_are_refused_naming_the_node_and_the_count() -> None:
    pools = [pool("infra", role("infra")), pool("gpu", role("gpu")), pool("db", role("db"))]
    labels = {ROLE + "infra": "", ROLE + "gpu": "", ROLE + "db": "", ROLE + "master": ""}
    with pytest.raises(SelectorError) as e:
        primary_pool(node(**labels), [*pools, pool("master", role("master"))])
    assert str(e.value) == "node n1 belongs to 3 custom roles, cannot proceed with this Node"


@pytest.mark.parametrize(
    ("value", "total", "expected"),
    [
        (None, 0, 1), (3, 2, 3), (1, 10, 1), ("0%", 10, 1), ("100%", 7, 7), ("33%", 10, 3),
        ("34%", 3, 1), ("99%", 100, 99), ("150%", 2, 3),
    ],
)  # fmt: skip
def test_max_unavailable_scaled_down_and_at_least_one(
    value: object, total: int, expected: int
) -> None:
    assert max_unavailable(value, total) == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (True, "maxUnavailable: invalid value for IntOrString: invalid type: bool"),
        ("2", "maxUnavailable: invalid value for IntOrString: invalid type: string is not a "
              "percentage"),
        ("two", 'maxUnavailable: invalid value "two"'),
        ("-10%", 'maxUnavailable: invalid value "-10%"'),
        (-1, "maxUnavailable: must not be negative, got -1"),
        (1.5, "maxUnavailable: invalid value for IntOrString: invalid type"),
        ([1], "maxUnavailable: invalid value for IntOrString: invalid type"),
    ],
)  # fmt: skip
def test_max_unavailable_refused_in_one_line(value: object, message: str) -> None:
    with pytest.raises(ValueError) as e:
        max_unavailable(value, 4)
    assert str(e.value) == message
