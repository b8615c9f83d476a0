"""Which pool a node belongs to, and what careless pools say (model/pool/hygiene): label
selector semantics as Kubernetes has them, master over a custom pool, a node in two custom
pools in none, and capped messages."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcd.model.pool.hygiene import cap, conflict_message, membership, refreshed, selector_problem

Obj = dict[str, Any]


def pool(name: str, selector: Any) -> Obj:
    return {"metadata": {"name": name}, "spec": {"nodeSelector": selector}}


def node(name: str, **labels: str) -> Obj:
    return {"metadata": {"name": name, "labels": labels}}


def expr(key: str, op: str, *values: str) -> Obj:
    out: Obj = {"key": key, "operator": op}
    if values:
        out["values"] = list(values)
    return out


def selected(selector: Obj, labels: dict[str, str]) -> bool:
    """Whether a custom pool with ``selector`` takes a node with ``labels``."""
    found = membership([pool("infra", selector)], [node("n", **labels)])
    return [n["metadata"]["name"] for n in found.nodes_of("infra")] == ["n"]


@pytest.mark.parametrize(
    ("selector", "labels", "chosen"),
    [
        ({"matchLabels": {"a": "1"}}, {"a": "1"}, True),
        ({"matchLabels": {"a": "1"}}, {"a": "2"}, False),
        ({"matchLabels": {"a": "1", "b": "2"}}, {"a": "1"}, False),
        ({"matchExpressions": [expr("a", "In", "1", "2")]}, {"a": "2"}, True),
        ({"matchExpressions": [expr("a", "In", "1", "2")]}, {"a": "3"}, False),
        ({"matchExpressions": [expr("a", "In", "1")]}, {}, False),
        ({"matchExpressions": [expr("a", "NotIn", "1")]}, {"a": "1"}, False),
        ({"matchExpressions": [expr("a", "NotIn", "1")]}, {"a": "2"}, True),
        ({"matchExpressions": [expr("a", "NotIn", "1")]}, {}, True),
        ({"matchExpressions": [expr("a", "Exists")]}, {"a": ""}, True),
        ({"matchExpressions": [expr("a", "Exists")]}, {"b": "1"}, False),
        ({"matchExpressions": [expr("a", "DoesNotExist")]}, {"a": "x"}, False),
        ({"matchExpressions": [expr("a", "DoesNotExist")]}, {"b": "x"}, True),
        ({"matchLabels": {"a": "1"}, "matchExpressions": [expr("b", "Exists")]}, {"a": "1"}, False),
        ({"matchLabels": {"a": "1"}, "matchExpressions": [expr("b", "Exists")]},
         {"a": "1", "b": "2"}, True),
        ({"matchExpressions": [expr("a", "In", "1"), expr("b", "NotIn", "2")]},
         {"a": "1", "b": "2"}, False),
    ],
)  # fmt: skip
def test_a_selector_takes_the_nodes_kubernetes_would(
    selector: Obj, labels: dict[str, str], chosen: bool
) -> None:
    assert selected(selector, labels) is chosen


ops = st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist"])
keys = st.sampled_from(["a", "b", "c"])
vals = st.sampled_from(["1", "2"])


@given(
    st.lists(st.tuples(keys, ops, st.lists(vals, min_size=1, max_size=2)), min_size=1, max_size=3),
    st.dictionaries(keys, vals, max_size=3),
)
def test_an_expression_selector_is_the_conjunction_of_its_terms(
    terms: list[tuple[str, str, list[str]]], labels: dict[str, str]
) -> None:
    exprs = [
        expr(k, op, *(v if op in ("In", "NotIn") else [])) for k, op, v in terms
    ]  # fmt: skip
    want = all(
        (op == "In" and labels.get(k) in v)
        or (op == "NotIn" and labels.get(k) not in v)
        or (op == "Exists" and k in labels)
        or (op == "DoesNotExist" and k not in labels)
        for k, op, v in terms
    )
    assert selected({"matchExpressions": exprs}, labels) is want


def role(name: str) -> Obj:
    return {"matchLabels": {f"node-role.kubernetes.io/{name}": ""}}


ROLE = "node-role.kubernetes.io/"


def test_master_wins_over_a_custom_pool_and_raises_the_alert() -> None:
    pools = [pool("master", role("master")), pool("worker", role("worker")),
             pool("infra", role("infra"))]  # fmt: skip
    nodes = [
        node("m", **{ROLE + "master": "", ROLE + "infra": ""}),
        node("w", **{ROLE + "worker": ""}),
        node("i", **{ROLE + "worker": "", ROLE + "infra": ""}),
        node("x", other="1"),
    ]
    found = membership(pools, nodes)
    assert [n["metadata"]["name"] for n in found.nodes_of("master")] == ["m"]
    assert [n["metadata"]["name"] for n in found.nodes_of("worker")] == ["w"]
    assert [n["metadata"]["name"] for n in found.nodes_of("infra")] == ["i"]
    assert found.alerts == {"m": 1, "w": 0, "i": 0}
    assert found.conflicts == {}
    assert found.invalid == {}
    assert found.nodes_of("nonexistent") == []


def test_a_pool_without_a_selector_or_selecting_everything_takes_no_node() -> None:
    pools = [pool("empty", {}), pool("none", None), pool("infra", role("infra"))]
    nodes = [node("a", **{ROLE + "infra": ""}), node("b")]
    found = membership(pools, nodes)
    assert found.nodes_of("empty") == []
    assert found.nodes_of("none") == []
    assert [n["metadata"]["name"] for n in found.nodes_of("infra")] == ["a"]
    assert found.alerts == {"a": 0}


def test_an_unusable_pool_does_not_stop_the_pools_after_it() -> None:
    pools = [
        pool("bad", {"matchExpressions": [expr("a", "Gt", "1")]}),
        pool("none", None),
        pool("infra", role("infra")),
    ]
    found = membership(pools, [node("a", **{ROLE + "infra": ""})])
    assert found.invalid == {
        "bad": 'invalid label selector: "Gt" is not a valid label selector operator'
    }
    assert [n["metadata"]["name"] for n in found.nodes_of("infra")] == ["a"]


def test_two_custom_pools_conflict_and_each_names_the_node() -> None:
    pools = [pool("a", role("a")), pool("b", role("b")), pool("c", role("c"))]
    nodes = [node("n1", **{ROLE + "b": "", ROLE + "a": ""}), node("n2", **{ROLE + "c": ""})]
    found = membership(pools, nodes)
    assert found.conflicts == {"n1": ("a", "b")}
    assert found.alerts == {"n1": 1, "n2": 0}
    assert found.nodes_of("a") == [] and found.nodes_of("b") == []
    assert found.conflicts_of("a") == {"n1": ("a", "b")}
    assert found.conflicts_of("c") == {}


@pytest.mark.parametrize(
    ("selector", "problem"),
    [
        ("role=infra", "invalid label selector: expected an object"),
        ({"matchExpressions": {"key": "a"}},
         "invalid label selector: matchExpressions: expected a list"),
        ({"matchExpressions": ["a"]}, "invalid label selector: matchExpressions: expected objects"),
        ({"matchExpressions": [{"key": "a"}]},
         'invalid label selector: "" is not a valid label selector operator'),
        ({"matchExpressions": [expr("a", 'G"t\\')]},
         'invalid label selector: "G\\"t\\\\" is not a valid label selector operator'),
        ({"matchExpressions": [expr("a", "NotIn")]},
         "invalid label selector: values: Invalid value: []: for 'in', 'notin' operators, "
         "values set can't be empty"),
        ({"matchExpressions": [expr("a", "DoesNotExist", "x")]},
         "invalid label selector: values: Invalid value: for 'exists', 'doesnotexist' "
         "operators, values set must be empty"),
        ({"matchExpressions": [expr("a", "In", "x"), expr("b", "Exists")]}, ""),
        ({"matchExpressions": [expr("a", "NotIn", "x"), expr("b", "DoesNotExist")]}, ""),
    ],
)  # fmt: skip
def test_selector_problems_name_what_is_wrong(selector: Any, problem: str) -> None:
    assert selector_problem(selector) == problem


def test_an_operator_is_quoted_to_256_characters() -> None:
    problem = selector_problem({"matchExpressions": [expr("a", "x" * 300)]})
    assert problem == (
        f'invalid label selector: "{"x" * 256}" is not a valid label selector operator'
    )


@pytest.mark.parametrize(("size", "limit"), [(100, 100), (101, 100), (2049, 2048), (5000, 2048)])
def test_a_long_message_is_cut_to_its_limit_saying_how_much(size: int, limit: int) -> None:
    text = "x" * size
    got = cap(text, limit)
    if size <= limit:
        assert got == text
    else:
        kept = limit - 40
        assert got == "x" * kept + f"... ({size - kept} more characters)"
        assert len(got) <= limit


def test_the_conflict_message_names_each_node_its_pools_and_its_config() -> None:
    conflicts = {"n2": ("a", "b"), "n1": ("a", "b", "c")}
    assert conflict_message("a", conflicts, {"n1": "rendered-a-1"}) == (
        "node n1 belongs to 3 custom roles, cannot proceed with this Node (pools a, b, c); "
        "it stays on rendered-a-1; "
        "node n2 belongs to 2 custom roles, cannot proceed with this Node (pools a, b); "
        "it stays on its current config"
    )


@pytest.mark.parametrize("count", [1, 20, 21, 40])
def test_the_conflict_message_of_many_nodes_is_capped_in_order(count: int) -> None:
    conflicts = {f"n{i:02}": ("a", "b") for i in range(count)}
    got = conflict_message("a", conflicts, {})
    assert len(got) <= 2048
    assert got.startswith("node n00 belongs to 2 custom roles")
    assert got.endswith("more characters)") is (count > 18)


LABELS = st.dictionaries(st.sampled_from(["node-role.kubernetes.io/worker",
                                          "node-role.kubernetes.io/master",
                                          "node-role.kubernetes.io/infra",
                                          "node-role.kubernetes.io/gpu", "zone"]),
                         st.sampled_from(["", "a"]), max_size=4)  # fmt: skip
POOLS = [
    pool("master", {"matchLabels": {"node-role.kubernetes.io/master": ""}}),
    pool("worker", {"matchLabels": {"node-role.kubernetes.io/worker": ""}}),
    pool("infra", {"matchExpressions": [expr("node-role.kubernetes.io/infra", "Exists")]}),
    pool("gpu", {"matchLabels": {"node-role.kubernetes.io/gpu": ""}}),
    pool("broken", {"matchExpressions": [expr("zone", "Near", "a")]}),
]


@given(labels=st.lists(LABELS, max_size=12), states=st.lists(st.sampled_from(["Done", "Working"])))
def test_a_refreshed_membership_is_the_one_worked_out_again(
    labels: list[dict[str, str]], states: list[str]
) -> None:
    """With no node added, removed or relabelled, the last membership with each node replaced
    by its new version (the controller's pass after only Node changes) is what matching every
    node again gives: the same members, in the same order, as the same objects."""
    before = [node(f"n{i:02d}", **found) for i, found in enumerate(labels)]
    after = [{"metadata": {**n["metadata"], "annotations": {"state": states[i % len(states)]}}}
             if states else dict(n) for i, n in enumerate(before)]  # fmt: skip
    again, fresh = refreshed(membership(POOLS, before), after), membership(POOLS, after)
    assert again.members.keys() == fresh.members.keys()
    for name, found in fresh.members.items():
        assert [id(n) for n in again.members[name]] == [id(n) for n in found], name
    assert (again.invalid, again.conflicts, again.alerts) == (
        fresh.invalid, fresh.conflicts, fresh.alerts)  # fmt: skip
