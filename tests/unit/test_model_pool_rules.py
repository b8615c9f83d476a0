"""Pool rules an admin sees (``oc get mcp``, ``oc describe mcp``): which nodes count as ready
(upstream's NotReady / OutOfDisk / NetworkUnavailable words), the status conditions and their
messages, when a condition's time moves, and who gets the target config next."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from mcd.model.planning.plan import Cost
from mcd.model.pool.pools import NodeView
from mcd.model.pool.rollout import (
    INVALID,
    NO_CAPACITY,
    NODE_FAILING,
    UNCONFIGURED,
    Rollout,
    calculate_status,
    condition,
    plan_rollout,
    render_condition,
    set_condition,
)
from mcd.model.pool.windows import parse_window, window_state
from mcd.model.vocabulary import Annotation

Obj = dict[str, Any]
V0, V1 = "rendered-worker-v0", "rendered-worker-v1"
NOW, LATER = "2026-11-23T04:00:00Z", "2026-11-23T05:00:00Z"


def node(
    name: str, current: str, desired: str, ready: bool = True, state: str = "Done", **extra: Any
) -> NodeView:
    return NodeView(name=name, current=current, desired=desired, state=state, ready=ready, **extra)


def pool(target: str = V1, **spec: Any) -> Obj:
    return {
        "metadata": {"name": "worker", "generation": 3},
        "spec": {"configuration": {"name": target}, **spec},
    }


def cond(status: Obj, kind: str) -> Obj:
    found = condition(status["conditions"], kind)
    assert found is not None, kind
    return dict(found)


def kube_node(*conditions: tuple[str, str], **meta: Any) -> Obj:
    return {
        "metadata": {"name": "n1", **meta},
        "status": {"conditions": [{"type": t, "status": s} for t, s in conditions]},
    }


# -- which nodes are ready (upstream checkNodeReady) ------------------------------------------


@pytest.mark.parametrize(
    ("conditions", "reason"),
    [
        ([("Ready", "False")], "node n1 is reporting NotReady=False"),
        ([("Ready", "Unknown")], "node n1 is reporting NotReady=Unknown"),
        ([("Ready", "True"), ("DiskPressure", "True")], "node n1 is reporting OutOfDisk=True"),
        ([("Ready", "True"), ("NetworkUnavailable", "True")],
         "node n1 is reporting NetworkUnavailable=True"),
        ([("NetworkUnavailable", "Unknown")], "node n1 is reporting NetworkUnavailable=Unknown"),
        # the first problem in the node's own order is the one reported
        ([("Ready", "False"), ("DiskPressure", "True")], "node n1 is reporting NotReady=False"),
        ([("DiskPressure", "True"), ("Ready", "False")], "node n1 is reporting OutOfDisk=True"),
    ],
)  # fmt: skip
def test_a_node_is_not_ready_in_upstreams_words(
    conditions: list[tuple[str, str]], reason: str
) -> None:
    view = NodeView.of(kube_node(*conditions))
    assert (view.ready, view.not_ready_reason) == (False, reason)
    assert view.unavailable and not view.schedulable_and_ready


@pytest.mark.parametrize(
    "conditions",
    [
        [],
        [("Ready", "True")],
        [("Ready", "True"), ("DiskPressure", "False"), ("NetworkUnavailable", "False")],
        [("Ready", "True"), ("MemoryPressure", "True"), ("PIDPressure", "True")],
    ],
)
def test_other_conditions_do_not_make_a_node_unready(conditions: list[tuple[str, str]]) -> None:
    view = NodeView.of(kube_node(*conditions))
    assert (view.ready, view.not_ready_reason) == (True, "")


def test_a_node_view_reads_the_agents_annotations_and_the_spec() -> None:
    view = NodeView.of(
        {
            "metadata": {
                "name": "n1",
                "creationTimestamp": "2026-01-01T00:00:00Z",
                "annotations": {Annotation.CURRENT_CONFIG: V0, Annotation.DESIRED_CONFIG: V1,
                                Annotation.STATE: "Degraded", Annotation.REASON: "disk full"},
            },
            "spec": {"unschedulable": True},
        }
    )  # fmt: skip
    assert view == NodeView(
        name="n1",
        current=V0,
        desired=V1,
        state="Degraded",
        reason="disk full",
        unschedulable=True,
        created="2026-01-01T00:00:00Z",
    )
    assert view.failing and view.degraded and not view.schedulable_and_ready


def test_a_bare_node_reads_as_empty_ready_and_schedulable() -> None:
    assert NodeView.of({}) == NodeView(name="")
    view = NodeView.of({"metadata": {"name": "n"}, "spec": {}, "status": {}})
    assert (view.name, view.reason, view.unschedulable, view.created) == ("n", "", False, "")
    assert view.schedulable_and_ready and not view.unavailable  # no desiredConfig yet


# -- status conditions (upstream calculateStatus) ---------------------------------------------


def test_all_updated_sets_updated_and_clears_updating_without_reason_or_message() -> None:
    p = pool()
    p["status"] = {"configuration": {"name": V0}}
    status = calculate_status(p, [node("a", V1, V1)], NOW)
    assert cond(status, "Updated") == {
        "type": "Updated",
        "status": "True",
        "lastTransitionTime": NOW,
        "message": f"All nodes are updated with MachineConfig {V1}",
    }
    assert cond(status, "Updating") == {
        "type": "Updating",
        "status": "False",
        "lastTransitionTime": NOW,
    }
    assert cond(status, "NodeDegraded") == {
        "type": "NodeDegraded",
        "status": "False",
        "lastTransitionTime": NOW,
    }
    assert status["configuration"] == {"name": V1}


def test_until_every_node_is_updated_the_pool_keeps_its_old_configuration() -> None:
    p = pool()
    p["status"] = {"configuration": {"name": V0, "source": [{"name": "00-worker"}]}}
    status = calculate_status(p, [node("a", V1, V1), node("b", V0, V1, state="Working")], NOW)
    assert status["configuration"] == {"name": V0, "source": [{"name": "00-worker"}]}
    assert cond(status, "Updated") == {"type": "Updated", "status": "False",
                                       "lastTransitionTime": NOW}  # fmt: skip
    assert cond(status, "Updating")["message"] == f"All nodes are updating to MachineConfig {V1}"


def test_the_status_never_shares_objects_with_the_pool() -> None:
    p = pool()
    p["spec"]["configuration"]["source"] = [{"name": "00-worker"}]
    p["status"] = {"configuration": {"name": V0, "source": [{"name": "old"}]},
                   "conditions": [{"type": "Custom", "status": "True", "extra": ["x"]}]}  # fmt: skip
    before = copy.deepcopy(p)
    for nodes in ([node("a", V1, V1)], [node("a", V0, V1, state="Working")]):
        status = calculate_status(p, nodes, NOW)
        status["configuration"]["source"].append({"name": "edited"})
        cond(status, "Custom")["extra"].append("edited")
        status["conditions"][0]["extra"].append("edited")
    assert p == before


def test_observed_generation_is_zero_when_the_pool_has_none() -> None:
    p = pool()
    del p["metadata"]["generation"]
    assert calculate_status(p, [], NOW)["observedGeneration"] == 0


def test_a_paused_pool_says_so_and_is_not_updating() -> None:
    status = calculate_status(pool(paused=True), [node("a", V0, V0)], NOW)
    assert cond(status, "Updating") == {
        "type": "Updating",
        "status": "False",
        "lastTransitionTime": NOW,
        "message": f"Pool is paused; will not update to MachineConfig {V1}",
    }


def test_updating_says_why_the_rollout_stopped() -> None:
    nodes = [node("a", V0, V1, state="Degraded"), node("b", V0, V1, state="Unreconcilable")]
    failing = Rollout(blocked=NODE_FAILING, failing=("a", "b"))
    status = calculate_status(pool(), nodes, NOW, rollout=failing)
    assert cond(status, "Updating") == {
        "type": "Updating",
        "status": "True",
        "lastTransitionTime": NOW,
        "message": f"All nodes are updating to MachineConfig {V1}; stopped: a, b failed to apply it",
    }
    invalid = Rollout(blocked=INVALID, error='maxUnavailable: invalid value "lots"')
    message = cond(calculate_status(pool(), nodes, NOW, rollout=invalid), "Updating")["message"]
    assert message == (
        f'All nodes are updating to MachineConfig {V1}; stopped: maxUnavailable: invalid value "lots"'
    )


def test_only_held_nodes_are_said_to_wait_for_the_window() -> None:
    window = parse_window('{"days": ["Sat"], "start": "02:00", "duration": "4h"}')
    closed = window_state(window, datetime(2026, 11, 23, 4, 0, tzinfo=UTC), ZoneInfo("UTC"))
    nodes = [node("a", V0, V0), node("b", V0, V0)]
    held = Rollout(waiting=("a", "b"), held=("a", "b"))
    message = cond(calculate_status(pool(), nodes, NOW, rollout=held, window=closed), "Updating")
    assert message["message"] == (
        f"All nodes are updating to MachineConfig {V1}; 2 nodes wait for the maintenance window "
        "(maintenance window closed; next opens at 2026-11-28T02:00+00:00)"
    )
    nothing_held = Rollout(targets=("a",), waiting=("b",))
    status = calculate_status(pool(), nodes, NOW, rollout=nothing_held, window=closed)
    assert cond(status, "Updating")["message"] == f"All nodes are updating to MachineConfig {V1}"
    assert cond(status, "MaintenanceWindow")["reason"] == "WindowClosed"


def test_the_window_condition_goes_away_with_the_window() -> None:
    p = pool()
    p["status"] = {"conditions": [{"type": "MaintenanceWindow", "status": "True"}]}
    status = calculate_status(p, [node("a", V1, V1)], NOW)
    assert condition(status["conditions"], "MaintenanceWindow") is None


def test_only_degraded_nodes_with_a_reason_are_quoted() -> None:
    nodes = [node("a", V1, V1, state="Degraded"), node("b", V1, V1, state="Degraded", reason="x")]
    status = calculate_status(pool(), nodes, NOW)
    assert cond(status, "NodeDegraded")["reason"] == "2 nodes are reporting degraded status on sync"
    assert cond(status, "NodeDegraded")["message"] == 'Node b is reporting: "x"'
    assert cond(status, "Degraded")["message"] == 'Node b is reporting: "x"'
    assert status["degradedMachineCount"] == 2


# -- set_condition (upstream SetMachineConfigPoolCondition) -----------------------------------


def test_a_condition_is_rewritten_only_when_status_reason_or_message_change() -> None:
    conditions: list[Obj] = [
        {"type": "A", "status": "True", "lastTransitionTime": NOW, "reason": "R", "message": "m"},
        {"type": "B", "status": "False", "lastTransitionTime": NOW},
    ]
    set_condition(conditions, "A", True, "R", "m", LATER)
    set_condition(conditions, "B", False, "", "", LATER)
    assert [c["type"] for c in conditions] == ["A", "B"]  # nothing changed: nothing moved
    assert conditions[0]["lastTransitionTime"] == NOW
    set_condition(conditions, "A", True, "R2", "m", LATER)  # same status: time kept, goes last
    assert conditions[-1] == {
        "type": "A", "status": "True", "lastTransitionTime": NOW, "reason": "R2", "message": "m"
    }  # fmt: skip
    set_condition(conditions, "A", True, "R2", "m2", LATER)
    assert conditions[-1]["message"] == "m2" and conditions[-1]["lastTransitionTime"] == NOW
    set_condition(conditions, "B", True, "", "", LATER)  # the status moved: so does the time
    assert conditions[-1] == {"type": "B", "status": "True", "lastTransitionTime": LATER}
    assert len(conditions) == 2


# -- render condition ------------------------------------------------------------------------


def test_a_good_render_clears_render_degraded_and_keeps_other_conditions() -> None:
    p = pool()
    p["status"] = {"conditions": render_condition(p, "no MachineConfigs found", NOW)}
    p["status"]["conditions"].append({"type": "Updated", "status": "True"})
    conditions = render_condition(p, None, LATER)
    assert condition(conditions, "RenderDegraded") == {
        "type": "RenderDegraded",
        "status": "False",
        "lastTransitionTime": LATER,
    }
    assert condition(conditions, "Updated") == {"type": "Updated", "status": "True"}
    assert render_condition({}, "boom", NOW) == [
        {
            "type": "RenderDegraded",
            "status": "True",
            "lastTransitionTime": NOW,
            "message": "Failed to render configuration for pool : boom",
        }
    ]


# -- who gets the target next ----------------------------------------------------------------


def test_a_pool_without_a_target_rolls_nothing_out() -> None:
    assert plan_rollout({"spec": {}}, [node("a", V0, V0)]) == Rollout(blocked=UNCONFIGURED)


def test_a_stopped_rollout_still_lists_who_waits() -> None:
    nodes = [node("a", V0, V0), node("b", V1, V1, state="Degraded")]
    failing = plan_rollout(pool(), nodes)
    assert failing == Rollout(waiting=("a",), blocked=NODE_FAILING, failing=("b",))
    invalid = plan_rollout(pool(maxUnavailable="lots"), [node("a", V0, V0)])
    assert invalid.waiting == ("a",) and invalid.blocked == INVALID


def test_a_node_degraded_on_an_older_target_is_still_a_candidate() -> None:
    """So a fixed config rolls out to it; it does not use up maxUnavailable meanwhile."""
    nodes = [node("x", V0, "rendered-old", state="Degraded"), node("a", V0, V0)]
    decision = plan_rollout(pool(maxUnavailable=1), nodes)
    assert decision.capacity == 1
    assert decision.targets == ("a",)  # upstream order: same zone and age, by name
    assert decision.waiting == ("x",)
    assert plan_rollout(pool(maxUnavailable=2), nodes).targets == ("a", "x")


def test_no_capacity_left_says_so_and_chooses_nobody() -> None:
    nodes = [node("a", V0, V1, state="Working"), node("b", V0, V0)]
    assert plan_rollout(pool(), nodes) == Rollout(waiting=("b",), blocked=NO_CAPACITY)


def test_a_closed_window_with_capacity_left_holds_only_the_disruptive() -> None:
    window = parse_window('{"days": ["Sat"], "start": "02:00", "duration": "4h"}')
    closed = window_state(window, datetime(2026, 11, 23, 4, 0, tzinfo=UTC), ZoneInfo("UTC"))
    nodes = [node("a", V0, V0), node("b", V0, V0)]
    costs = {"a": Cost.REBOOT, "b": Cost.NONE}
    decision = plan_rollout(pool(maxUnavailable=2), nodes, costs=costs, window=closed)
    assert decision == Rollout(targets=("b",), waiting=("a",), held=("a",), capacity=2)
    full = plan_rollout(
        pool(), [node("w", V0, V1, state="Working"), *nodes], costs=costs, window=closed
    )
    assert full == Rollout(waiting=("a", "b"), held=("a",), blocked=NO_CAPACITY)
