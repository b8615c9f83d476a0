"""A pool's status conditions in full (model/pool/rollout: ``calculate_status``,
``set_condition``, ``render_condition``) and the rollout's edges: what ``oc get mcp -o yaml``
shows after each pass, condition by condition."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

from mcd.model.planning.plan import Cost
from mcd.model.pool.pools import NodeView
from mcd.model.pool.rollout import (
    CANARY_WAVE,
    NO_CAPACITY,
    Rollout,
    calculate_status,
    needs_window,
    plan_rollout,
    render_condition,
    set_condition,
)
from mcd.model.pool.windows import parse_window, window_state

Obj = dict[str, Any]
V0, V1 = "rendered-worker-v0", "rendered-worker-v1"
T0, T1 = "2026-11-23T04:00:00Z", "2026-11-23T05:00:00Z"


def node(name: str, current: str = V1, desired: str = V1, state: str = "Done",
         **kw: Any) -> NodeView:  # fmt: skip
    return NodeView(name=name, current=current, desired=desired, state=state, **kw)


def pool(**spec: Any) -> Obj:
    return {"metadata": {"name": "worker", "generation": 2},
            "spec": {"configuration": {"name": V1}, **spec}}  # fmt: skip


def cond(kind: str, status: str, message: str = "", reason: str = "", at: str = T0) -> Obj:
    out: Obj = {"type": kind, "status": status, "lastTransitionTime": at}
    if reason:
        out["reason"] = reason
    if message:
        out["message"] = message
    return out


def test_a_pool_all_on_its_target_in_an_open_window() -> None:
    window = parse_window('{"days": ["Mon"], "start": "03:00", "duration": "4h"}')
    state = window_state(window, datetime(2026, 11, 23, 4, 0, tzinfo=UTC), ZoneInfo("UTC"))
    status = calculate_status(pool(), [node("a"), node("b")], T0, window=state)
    assert status["conditions"] == [
        cond("Updated", "True", f"All nodes are updated with MachineConfig {V1}"),
        cond("Updating", "False"),
        cond("NodeDegraded", "False"),
        cond("Degraded", "False"),
        cond("MaintenanceWindow", "True", state.describe(), "WindowOpen"),
    ]
    assert status["configuration"] == {"name": V1}


def test_a_halted_rollout_says_so_and_names_ten_nodes_put_last() -> None:
    nodes = [node(f"n{i:02}", V0, V0) for i in range(12)]
    rollout = Rollout(blocked="halted", last=tuple(f"n{i:02}" for i in range(12)))
    status = calculate_status(pool(), nodes, T0, rollout=rollout)
    names = ", ".join(f"n{i:02}" for i in range(10))
    assert status["conditions"][:2] == [
        cond("Updated", "False"),
        cond("Updating", "True",
             f"All nodes are updating to MachineConfig {V1}; halted by the rollout policy "
             f"(see RolloutHalted); last: {names} and 2 more (a PodDisruptionBudget would "
             "block the drain, or it timed out)"),
    ]  # fmt: skip


def test_ten_nodes_put_last_are_all_named() -> None:
    rollout = Rollout(last=tuple(f"n{i}" for i in range(10)))
    status = calculate_status(pool(), [node("x", V0, V0)], T0, rollout=rollout)
    updating = status["conditions"][1]
    assert updating["message"].endswith(
        "; last: n0, n1, n2, n3, n4, n5, n6, n7, n8, n9 (a PodDisruptionBudget would block "
        "the drain, or it timed out)"
    )


def test_a_failed_render_degrades_the_pool_with_no_node_message() -> None:
    p = pool()
    p["status"] = {"conditions": render_condition(p, "no MachineConfigs found", T0)}
    status = calculate_status(p, [node("a")], T1)
    assert status["conditions"][-1] == cond("Degraded", "True", at=T1)
    assert [c["type"] for c in status["conditions"]] == [
        "RenderDegraded", "Updated", "Updating", "NodeDegraded", "Degraded"
    ]  # fmt: skip


def test_a_degraded_node_without_a_reason_counts_but_is_not_quoted() -> None:
    nodes = [node("a", V0, V1, "Degraded"), node("b", V0, V1, "Unreconcilable", reason="x")]
    status = calculate_status(pool(), nodes, T0)
    by_type = {c["type"]: c for c in status["conditions"]}
    assert by_type["NodeDegraded"] == cond(
        "NodeDegraded", "True", 'Node b is reporting: "x"',
        "2 nodes are reporting degraded status on sync")  # fmt: skip
    assert by_type["Degraded"] == cond("Degraded", "True", 'Node b is reporting: "x"')


def test_a_recovered_pool_clears_degraded_and_drops_the_window() -> None:
    p = pool()
    p["status"] = {"conditions": [cond("Degraded", "True", "old", at=T0),
                                  cond("MaintenanceWindow", "False", "w", "WindowClosed")]}  # fmt: skip
    before = copy.deepcopy(p)
    status = calculate_status(p, [node("a")], T1)
    by_type = {c["type"]: c for c in status["conditions"]}
    assert by_type["Degraded"] == cond("Degraded", "False", at=T1)
    assert "MaintenanceWindow" not in by_type
    assert p == before  # the pool read is never changed


def test_a_condition_unchanged_stays_put_and_a_changed_one_goes_last() -> None:
    conditions = [cond("A", "True", "m", "r"), cond("B", "False")]
    set_condition(conditions, "A", True, "r", "m", T1)
    assert conditions == [cond("A", "True", "m", "r"), cond("B", "False")]
    set_condition(conditions, "A", True, "r2", "m", T1)
    assert conditions == [cond("B", "False"), cond("A", "True", "m", "r2")]
    set_condition(conditions, "A", True, "r2", "m2", T1)
    assert conditions[-1] == cond("A", "True", "m2", "r2")
    set_condition(conditions, "A", False, "", "", T1)
    assert conditions[-1] == cond("A", "False", at=T1)
    set_condition(conditions, "C", True, "", "x" * 3000, T1)
    assert len(conditions[-1]["message"]) <= 2048


def test_a_render_that_succeeds_clears_render_degraded_without_changing_the_pool() -> None:
    p = pool()
    p["status"] = {"conditions": [cond("RenderDegraded", "True", "old")]}
    before = copy.deepcopy(p)
    assert render_condition(p, None, T1) == [cond("RenderDegraded", "False", at=T1)]
    assert p == before


def test_an_update_that_changes_nothing_waits_for_no_window_unless_reboots_only() -> None:
    assert not needs_window(Cost.NONE, rebootless_anytime=False)
    assert not needs_window(Cost.NONE, rebootless_anytime=True)
    assert needs_window(Cost.RELOAD, rebootless_anytime=False)
    assert not needs_window(Cost.RELOAD, rebootless_anytime=True)
    assert needs_window(Cost.DRAIN, rebootless_anytime=True)
    assert needs_window(None, rebootless_anytime=True)


def test_nothing_to_do_is_not_blocked() -> None:
    assert plan_rollout(pool(), [node("a"), node("b")]) == Rollout(capacity=1)


def test_a_canary_chosen_is_not_reported_as_waiting_for_the_wave() -> None:
    got = plan_rollout(pool(), [node("a", V0, V0), node("b", V0, V0)], only={"a"})
    assert (got.targets, got.blocked, got.waiting) == (("a",), "", ("b",))
    none = plan_rollout(pool(), [node("a", V0, V0)], only=set())
    assert (none.targets, none.blocked) == ((), CANARY_WAVE)


def test_without_capacity_the_nodes_a_budget_blocks_are_still_named_last() -> None:
    nodes = [node("a", V0, V1, "Working"), node("b", V0, V0), node("c", V0, V0)]
    got = plan_rollout(pool(), nodes, drain_blocked={"b": "pdb"})
    assert (got.blocked, got.last, got.targets) == (NO_CAPACITY, ("b",), ())


def test_when_only_released_nodes_remain_they_go_and_none_is_put_last() -> None:
    nodes = [node("a", V0, V0, created="2026-01-01"), node("b", V0, V0, created="2026-01-02")]
    got = plan_rollout(pool(), nodes, released={"a", "b"})
    assert (got.targets, got.last) == (("a",), ())
    some = plan_rollout(pool(), nodes, released={"a"})
    assert (some.targets, some.last) == (("b",), ("a",))
