"""Which drains a PodDisruptionBudget would block now (model/drain/budgets): the forecast the
controller uses to put a node last, in the words ``mcd status`` shows, and the released mark."""

from __future__ import annotations

from typing import Any

import pytest

from mcd.model.drain.budgets import blocking, forecast, released_for

Obj = dict[str, Any]


def pod(name: str, node: str = "w1", ns: str = "app", **labels: str) -> Obj:
    return {"metadata": {"name": name, "namespace": ns, "labels": labels,
                         "ownerReferences": [{"kind": "ReplicaSet", "controller": True}]},
            "spec": {"nodeName": node}, "status": {"phase": "Running"}}  # fmt: skip


def pdb(name: str, allowed: int = 0, ns: str = "app", selector: Any = None, **meta: Any) -> Obj:
    return {"metadata": {"name": name, "namespace": ns, **meta},
            "spec": {"selector": {} if selector is None else selector},
            "status": {"disruptionsAllowed": allowed}}  # fmt: skip


def test_a_node_lists_ten_blocked_pods_then_counts() -> None:
    pods = [pod(f"p{i:02}") for i in range(12)]
    got = forecast(pods, [pdb("web")])
    listed = "; ".join(f"app/p{i:02}: PodDisruptionBudget app/web allows no disruption"
                       for i in range(10))  # fmt: skip
    assert got == {"w1": listed + "; and 2 more pods"}
    ten = forecast(pods[:10], [pdb("web")])
    assert ten == {"w1": listed}


def test_pods_a_drain_skips_or_without_a_node_are_not_counted() -> None:
    daemon = pod("ds")
    daemon["metadata"]["ownerReferences"] = [{"kind": "DaemonSet", "controller": True}]
    unscheduled = pod("pending")
    unscheduled["spec"] = {}
    other_ns = pod("x", ns="other")
    got = forecast([daemon, unscheduled, other_ns, pod("web", node="w2")], [pdb("web")])
    assert got == {"w2": "app/web: PodDisruptionBudget app/web allows no disruption"}


def test_a_budget_blocks_only_pods_it_selects_and_only_while_it_allows_nothing() -> None:
    sel = {"matchLabels": {"app": "web"}}
    pods = [pod("a", app="web"), pod("b", app="db")]
    assert forecast(pods, [pdb("web", selector=sel)]) == {
        "w1": "app/a: PodDisruptionBudget app/web allows no disruption"
    }
    assert forecast(pods, [pdb("web", allowed=1, selector=sel)]) == {}
    expr = {"matchExpressions": [{"key": "app", "operator": "In", "values": ["db"]}]}
    assert forecast(pods, [pdb("db", selector=expr)]) == {
        "w1": "app/b: PodDisruptionBudget app/db allows no disruption"
    }
    no_key = {"matchExpressions": [{"operator": "Exists"}]}
    assert forecast([pod("c", **{"": "x"})], [pdb("odd", selector=no_key)]) == {
        "w1": "app/c: PodDisruptionBudget app/odd allows no disruption"
    }


@pytest.mark.parametrize(
    ("status", "generation", "blocks"),
    [({"disruptionsAllowed": 1, "observedGeneration": 1}, 1, False),
     ({"disruptionsAllowed": 1, "observedGeneration": 1}, 2, True),
     ({"disruptionsAllowed": 1, "observedGeneration": 0}, None, False),
     ({"disruptionsAllowed": 1}, 5, False),
     ({"disruptionsAllowed": 0}, 1, True),
     ({}, 1, True)],
)  # fmt: skip
def test_a_budget_not_yet_observed_at_its_generation_blocks(
    status: Obj, generation: int | None, blocks: bool
) -> None:
    budget = {"metadata": {"name": "b", "generation": generation}, "status": status}
    assert (blocking([budget]) == [budget]) is blocks


@pytest.mark.parametrize(
    ("value", "target"),
    [("rendered-w-2: drain timed out: a: b", "rendered-w-2"), ("rendered-w-2", "rendered-w-2"),
     ("", ""), (None, "")],
)  # fmt: skip
def test_the_released_mark_names_the_target(value: str | None, target: str) -> None:
    annotations = {} if value is None else {"mcd-project.github.io/drain-released": value}
    assert released_for({"metadata": {"annotations": annotations}}) == target
