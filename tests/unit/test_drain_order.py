"""Drain-aware order: nodes whose drain a PodDisruptionBudget would block now go after the
others; a node whose drain timed out goes only once no other node waits; the forecast
reads budgets as the eviction API does."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from mcd.controller.sync import Snapshot, Syncer
from mcd.model.drain.budgets import DRAIN_RELEASED, blocking, forecast, selects
from mcd.model.drain.settings import DRAIN_TIMEOUT_ANNOTATION
from mcd.model.pool.pools import UPDATE_TAINT, NodeView
from mcd.model.pool.render import render
from mcd.model.pool.rollout import calculate_status, condition, drain_order, plan_rollout
from mcd.model.vocabulary import Annotation
from tests.unit.test_controller_sync import NOW, Writer, mc, node
from tests.unit.test_controller_sync import pool as worker_pool

Obj = dict[str, Any]


def pod(ns: str, name: str, node: str, **labels: str) -> Obj:
    return {"metadata": {"namespace": ns, "name": name, "labels": labels,
                         "ownerReferences": [{"kind": "ReplicaSet", "controller": True}]},
            "spec": {"nodeName": node}, "status": {"phase": "Running"}}  # fmt: skip


def pdb(ns: str, name: str, selector: Obj | None, allowed: int | None) -> Obj:
    out: Obj = {"metadata": {"namespace": ns, "name": name, "generation": 1},
                "spec": {"selector": selector}}  # fmt: skip
    if allowed is not None:
        out["status"] = {"disruptionsAllowed": allowed, "observedGeneration": 1}
    return out


def test_the_forecast_names_each_pod_and_budget_that_would_block() -> None:
    pods = [pod("apps", "web-0", "n1", app="web"), pod("apps", "web-1", "n2", app="web"),
            pod("apps", "db-0", "n3", app="db"), pod("other", "web-9", "n4", app="web")]  # fmt: skip
    budgets = [pdb("apps", "web-pdb", {"matchLabels": {"app": "web"}}, 0),
               pdb("apps", "db-pdb", {"matchLabels": {"app": "db"}}, 1)]  # fmt: skip
    assert forecast(pods, budgets) == {
        "n1": "apps/web-0: PodDisruptionBudget apps/web-pdb allows no disruption",
        "n2": "apps/web-1: PodDisruptionBudget apps/web-pdb allows no disruption",
    }


def test_budgets_without_status_or_stale_block_and_daemonset_pods_do_not_count() -> None:
    fresh = pdb("a", "p", {}, 2)
    stale = {**fresh, "metadata": {**fresh["metadata"], "generation": 2}}
    assert blocking([pdb("a", "p", {}, None), stale, fresh]) == [pdb("a", "p", {}, None), stale]
    ds = pod("a", "agent", "n1")
    ds["metadata"]["ownerReferences"] = [{"kind": "DaemonSet", "controller": True}]
    assert forecast([ds], [pdb("a", "all", {}, 0)]) == {}
    assert forecast([pod("a", "x", "n1")], [pdb("a", "none", None, 0)]) == {}


@given(st.dictionaries(st.sampled_from("abc"), st.sampled_from("xyz")),
       st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt"]),
       st.lists(st.sampled_from("xyz"), max_size=2))  # fmt: skip
def test_selects_is_kubernetes_label_selector_semantics(
    labels: dict[str, str], op: str, values: list[str]
) -> None:
    got = selects({"matchExpressions": [{"key": "a", "operator": op, "values": values}]}, labels)
    expected = {
        "In": "a" in labels and labels["a"] in values,
        "NotIn": "a" not in labels or labels["a"] not in values,
        "Exists": "a" in labels,
        "DoesNotExist": "a" not in labels,
        "Gt": False,
    }[op]
    assert got == expected


def views(*names: str) -> list[NodeView]:
    return [NodeView(n, current="old", desired="old", state="Done", created=f"2026-01-0{i + 1}")
            for i, n in enumerate(names)]  # fmt: skip


def pool(max_unavailable: int) -> Obj:
    return {"metadata": {"name": "worker"},
            "spec": {"configuration": {"name": "new"}, "maxUnavailable": max_unavailable}}  # fmt: skip


def test_a_node_a_budget_would_block_goes_last() -> None:
    nodes = views("a", "b", "c")
    plain = plan_rollout(pool(1), nodes)
    assert plain.targets == ("a",), "upstream order: the oldest first"
    aware = plan_rollout(pool(1), nodes, drain_blocked={"a": "apps/web-0: ..."})
    assert aware.targets == ("b",) and aware.last == ("a",)
    assert plan_rollout(pool(3), nodes, drain_blocked={"a": "x"}).targets == ("b", "c", "a")


def test_a_released_node_waits_until_no_other_node_does() -> None:
    nodes = views("a", "b")
    assert plan_rollout(pool(2), nodes, released={"a"}).targets == ("b",)
    assert plan_rollout(pool(2), views("a"), released={"a"}).targets == ("a",)


def test_the_updating_message_says_who_goes_last() -> None:
    nodes = views("a", "b", "c")
    rollout = plan_rollout(pool(1), nodes, drain_blocked={"a": "x"})
    status = calculate_status(pool(1), nodes, "now", rollout=rollout)
    message = condition(status["conditions"], "Updating")["message"]  # type: ignore[index]
    assert message.endswith(
        "; last: a (a PodDisruptionBudget would block the drain, or it timed out)"
    )


@given(st.lists(st.sampled_from("abcdefgh"), unique=True),
       st.sets(st.sampled_from("abcdefgh")), st.sets(st.sampled_from("abcdefgh")))  # fmt: skip
def test_drain_order_is_a_stable_partition(
    names: list[str], blocked: set[str], released: set[str]
) -> None:
    nodes = views(*names) if len(names) < 10 else []
    ordered, _last = drain_order(nodes, dict.fromkeys(blocked, "x"), released)
    got = [n.name for n in ordered]
    fresh = [n for n in names if n not in released] or names
    assert sorted(got) == sorted(fresh)
    free = [n for n in got if n not in blocked]
    assert got[: len(free)] == free, "no blocked node before a free one"
    assert free == [n for n in names if n in free], "upstream order kept within a group"


def test_a_released_drain_takes_the_target_back_marks_the_node_and_tells_the_pool() -> None:

    old, new = (
        render("worker", [mc("00-worker")]),
        render("worker", [mc("00-worker"), mc("50", kernelArguments=["b=2"])]),
    )
    p = worker_pool(configuration={"name": new.name}, maxUnavailable=1)
    p["metadata"]["annotations"] = {DRAIN_TIMEOUT_ANNOTATION: "2h"}
    stuck, other = node("n1", old.name), node("n2", old.name)
    stuck["metadata"]["annotations"][Annotation.DESIRED_CONFIG] = new.name
    stuck["metadata"]["annotations"][Annotation.STATE] = "Working"
    writer = Writer()
    writer.pools["worker"] = p
    why = "apps/web-0: blocked by PodDisruptionBudget apps/web-pdb: ..."
    syncer = Syncer(writer, "0.1.0", clock=lambda: NOW,  # type: ignore[arg-type]
                    drain_released=lambda: {"n1": why})  # fmt: skip
    configs = {
        c["metadata"]["name"]: c for c in (mc("00-worker"), mc("50", kernelArguments=["b=2"]))
    }
    configs[old.name] = {"metadata": {"name": old.name}, "spec": old.spec}
    syncer.sync_pool(p, Snapshot([p], configs, [stuck, other]))
    ((name, (config, mark)),) = writer.of("release")
    assert (name, config) == ("n1", old.name)
    message = (f"node n1: drain exceeded the pool's drain timeout 2h0m0s; its slot is released "
               f"and it goes last: {why}")  # fmt: skip
    assert mark == f"{new.name}: {message}"
    assert ("DrainReleased", message) in writer.of("event")
    assert writer.of("desired") == [], "n1 holds its slot until its agent has backed out"
    backed_out = node("n1", old.name)  # the agent gave the drain up: Done on its config
    backed_out["metadata"]["annotations"][DRAIN_RELEASED] = mark
    for n in (backed_out, other):  # as the first pass left them (this Writer echoes no Node)
        n["spec"] = {"taints": [dict(UPDATE_TAINT)]}
    writer.calls.clear()
    syncer.drain_released = lambda: {}
    syncer.sync_pool(p, Snapshot([p], configs, [backed_out, other]))
    assert writer.of("desired") == [("n2", new.name)], "the slot goes to the next node"
