"""Rollout decisions and pool status as pure functions (upstream TestMaxUnavailable,
TestGetCandidateMachines, TestSortNodeList, TestGetPrimaryPoolForNode, calculateStatus)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from mcd.model.planning.plan import Cost
from mcd.model.pool.pools import (
    NodeView,
    SelectorError,
    max_unavailable,
    nodes_for_pool,
    primary_pool,
    selector_matches,
    upstream_order,
)
from mcd.model.pool.rollout import (
    NODE_FAILING,
    PAUSED,
    WINDOW,
    calculate_status,
    condition,
    plan_rollout,
    render_condition,
)
from mcd.model.pool.windows import parse_window, window_state
from mcd.model.vocabulary import Annotation

Obj = dict[str, Any]
V0, V1, V2 = "rendered-worker-v0", "rendered-worker-v1", "rendered-worker-v2"
NOW = "2026-11-23T04:00:00Z"


def node(
    name: str, current: str, desired: str, ready: bool = True, state: str = "Done", **extra: Any
) -> NodeView:
    return NodeView(name=name, current=current, desired=desired, state=state, ready=ready, **extra)


def pool(target: str = V1, max_unavailable: object = None, paused: bool = False) -> Obj:
    spec: Obj = {"configuration": {"name": target}, "paused": paused}
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    return {"metadata": {"name": "worker", "generation": 3}, "spec": spec}


@pytest.mark.parametrize(
    ("value", "total", "expected"),
    [
        (None, 4, 1),
        (2, 4, 2),
        (0, 4, 1),
        ("50%", 4, 2),
        ("60%", 4, 2),
        ("10%", 50, 5),
        ("1%", 4, 1),
    ],
)
def test_max_unavailable(value: object, total: int, expected: int) -> None:
    assert max_unavailable(value, total) == expected


@pytest.mark.parametrize("value", ["50 percent", "60", "40 %", -1, True])
def test_max_unavailable_refuses(value: object) -> None:
    with pytest.raises(ValueError, match="maxUnavailable"):
        max_unavailable(value, 4)


# Upstream's TestGetCandidateMachines, with "progress" as maxUnavailable (target V1).
CANDIDATES = [
    ("no progress - capacity 1", 1,
     [node("node-0", V1, V1), node("node-1", V1, V1), node("node-2", V1, V1)], []),
    ("no progress - capacity 0", 1,
     [node("node-0", V1, V1), node("node-1", V1, V1), node("node-2", V1, V1, ready=False)], []),
    ("no progress because we have an unavailable node", 1,
     [node("node-0", V1, V1), node("node-1", V1, V1, ready=False), node("node-2", V0, V1)], []),
    ("node-0 is unavailable and should be skipped over", 2,
     [node("node-0", V0, V0, ready=False), node("node-1", V0, V0), node("node-2", V0, V0)],
     ["node-1"]),
    ("node-2 is going to change config, so we can only progress one more", 3,
     [node("node-0", V1, V1), node("node-1", V1, V1, ready=False), node("node-2", V0, V1),
      node("node-3", V0, V0), node("node-4", V0, V0)], ["node-3"]),
    ("We have a node working, don't start anything else", 1,
     [node("node-0", V1, V1), node("node-1", V1, V1), node("node-2", V0, V1),
      node("node-3", V0, V0), node("node-4", V0, V0)], []),
    ("progress on old stuck node", 1,
     [node("node-0", V1, V1), node("node-1", "v0.1", "v0.2", state="Degraded"),
      node("node-2", V0, V0)], ["node-1"]),
    ("Don't change a degraded node to same config, but also don't start another", 1,
     [node("node-0", V1, V1), node("node-1", V1, V1, state="Degraded"), node("node-2", V0, V0)],
     []),
    ("Must be able to roll back", 1,
     [node("node-0", V1, V1), node("node-1", V1, V1), node("node-2", V1, V2, state="Degraded"),
      node("node-3", V1, V1)], ["node-2"]),
    ("Validate we also don't affect nodes which haven't started work", 1,
     [node("node-0", V1, V1), node("node-2", V1, V2, state="Done"), node("node-3", V1, V1)], []),
    ("More nodes in mixed order", 4,
     [node("node-0", V1, V1), node("node-1", V1, V1, ready=False), node("node-2", V0, V1),
      node("node-3", V0, V0), node("node-4", V0, V0), node("node-5", V0, V0),
      node("node-6", V0, V0), node("node-7", V1, V1), node("node-8", V1, V1)],
     ["node-3", "node-4"]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("progress", "nodes", "expected"), [c[1:] for c in CANDIDATES], ids=[c[0] for c in CANDIDATES]
)
def test_candidates(progress: int, nodes: list[NodeView], expected: list[str]) -> None:
    assert list(plan_rollout(pool(max_unavailable=progress), nodes).targets) == expected


def test_unschedulable_counts_as_unavailable() -> None:
    nodes = [node("a", V1, V1, unschedulable=True), node("b", V0, V0), node("c", V0, V0)]
    assert plan_rollout(pool(max_unavailable=1), nodes).targets == ()
    assert plan_rollout(pool(max_unavailable=2), nodes).targets == ("b",)


def test_paused_writes_nothing_but_knows_who_waits() -> None:
    nodes = [node("a", V0, V0), node("b", V0, V0)]
    decision = plan_rollout(pool(max_unavailable=2, paused=True), nodes)
    assert decision.targets == ()
    assert decision.blocked == PAUSED
    assert decision.waiting == ("a", "b")


def test_a_node_degraded_on_the_target_stops_the_rollout() -> None:
    """Stricter than upstream: with room for two more, nothing starts."""
    nodes = [node("a", V0, V1, state="Degraded", reason="boom"), *(node(n, V0, V0) for n in "bcd")]
    decision = plan_rollout(pool(max_unavailable=3), nodes)
    assert decision.targets == ()
    assert decision.blocked == NODE_FAILING
    assert decision.failing == ("a",)


def test_a_new_node_gets_the_target() -> None:
    nodes = [node("a", V1, V1), NodeView(name="new")]
    assert plan_rollout(pool(max_unavailable=1), nodes).targets == ("new",)


def test_upstream_order_zone_then_age_then_no_zone() -> None:
    nodes = [
        NodeView(name="n1", created="2026-01-03T00:00:00Z"),
        NodeView(name="n2", zone="b", created="2026-01-01T00:00:00Z"),
        NodeView(name="n3", zone="a", created="2026-01-02T00:00:00Z"),
        NodeView(name="n4", created="2026-01-01T00:00:00Z"),
        NodeView(name="n5", zone="a", created="2026-01-01T00:00:00Z"),
    ]
    assert [n.name for n in upstream_order(nodes)] == ["n5", "n3", "n2", "n4", "n1"]


def mcp(name: str, **match: str) -> Obj:
    return {"metadata": {"name": name}, "spec": {"nodeSelector": {"matchLabels": match}}}


def kube_node(name: str, **labels: str) -> Obj:
    return {"metadata": {"name": name, "labels": labels}}


ROLE = "node-role.kubernetes.io/"
POOLS = [
    mcp("master", **{ROLE + "master": ""}),
    mcp("worker", **{ROLE + "worker": ""}),
    mcp("infra", **{ROLE + "infra": ""}),
    mcp("gpu", **{ROLE + "gpu": ""}),
]


@pytest.mark.parametrize(
    ("roles", "expected"),
    [
        (["worker"], "worker"),
        (["worker", "infra"], "infra"),
        (["master", "worker"], "master"),
        (["master", "infra"], "master"),
        (["infra"], "infra"),
        ([], None),
    ],
)
def test_primary_pool(roles: list[str], expected: str | None) -> None:
    n = kube_node("n", **{ROLE + r: "" for r in roles})
    found = primary_pool(n, POOLS)
    assert (found["metadata"]["name"] if found else None) == expected


def test_two_custom_pools_is_an_error_and_the_node_is_left_out() -> None:
    n = kube_node("n", **{ROLE + "infra": "", ROLE + "gpu": ""})
    with pytest.raises(SelectorError, match="node n belongs to 2 custom roles"):
        primary_pool(n, POOLS)
    assert nodes_for_pool(POOLS[2], POOLS, [n]) == []


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        (None, {"a": "1"}, False),
        ({}, {"a": "1"}, True),
        ({"matchExpressions": [{"key": "a", "operator": "In", "values": ["1", "2"]}]}, {"a": "2"}, True),
        ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}, {"a": "1"}, False),
        ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}, {}, True),
        ({"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {}, False),
        ({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, {}, True),
    ],
)  # fmt: skip
def test_selectors(selector: Obj | None, labels: dict[str, str], expected: bool) -> None:
    assert selector_matches(selector, labels) is expected


# -- status (upstream calculateStatus) -------------------------------------------------------


def test_status_counts_and_updating() -> None:
    nodes = [
        node("a", V1, V1),
        node("b", V1, V1, ready=False),
        node("c", V0, V1, state="Working"),
        node("d", V0, V0),
    ]
    status = calculate_status(pool(), nodes, NOW)
    assert {k: status[k] for k in status if k.endswith("Count")} == {
        "machineCount": 4,
        "updatedMachineCount": 2,
        "readyMachineCount": 1,
        "unavailableMachineCount": 2,
        "degradedMachineCount": 0,
    }
    assert status["observedGeneration"] == 3
    assert status["configuration"] == {}
    updating = condition(status["conditions"], "Updating")
    assert updating is not None and updating["status"] == "True"
    assert updating["message"] == f"All nodes are updating to MachineConfig {V1}"


def test_status_all_updated_moves_the_configuration() -> None:
    status = calculate_status(pool(), [node("a", V1, V1), node("b", V1, V1)], NOW)
    updated = condition(status["conditions"], "Updated")
    assert updated is not None and updated["status"] == "True"
    assert updated["message"] == f"All nodes are updated with MachineConfig {V1}"
    assert status["configuration"] == {"name": V1}
    degraded = condition(status["conditions"], "Degraded")
    assert degraded is not None and degraded["status"] == "False"


def test_status_paused() -> None:
    status = calculate_status(pool(paused=True), [node("a", V0, V0)], NOW)
    updating = condition(status["conditions"], "Updating")
    assert updating is not None and updating["status"] == "False"
    assert updating["message"] == f"Pool is paused; will not update to MachineConfig {V1}"


def test_status_node_degraded() -> None:
    nodes = [node("a", V0, V1, state="Degraded", reason='failed to drain "x"'), node("b", V1, V1)]
    status = calculate_status(pool(), nodes, NOW, rollout=plan_rollout(pool(), nodes))
    nd = condition(status["conditions"], "NodeDegraded")
    assert nd is not None and nd["status"] == "True"
    assert nd["reason"] == "1 nodes are reporting degraded status on sync"
    assert nd["message"] == 'Node a is reporting: "failed to drain \\"x\\""'
    degraded = condition(status["conditions"], "Degraded")
    assert degraded is not None and degraded["message"] == nd["message"]
    updating = condition(status["conditions"], "Updating")
    assert updating is not None and updating["message"].endswith("; stopped: a failed to apply it")
    assert status["degradedMachineCount"] == 1


def test_render_degraded_makes_the_pool_degraded() -> None:
    p = pool()
    p["status"] = {"conditions": render_condition(p, "no MachineConfigs found", NOW)}
    rd = condition(p["status"]["conditions"], "RenderDegraded")
    assert rd is not None
    assert (
        rd["message"] == "Failed to render configuration for pool worker: no MachineConfigs found"
    )
    status = calculate_status(p, [node("a", V1, V1)], NOW)
    degraded = condition(status["conditions"], "Degraded")
    assert degraded is not None and degraded["status"] == "True"


def test_transition_time_moves_only_with_the_status() -> None:
    p = pool()
    first = calculate_status(p, [node("a", V0, V1, state="Working")], NOW)
    p["status"] = first
    later = calculate_status(p, [node("a", V0, V1, state="Working")], "2026-11-23T05:00:00Z")
    assert later == first
    done = calculate_status(p, [node("a", V1, V1)], "2026-11-23T05:00:00Z")
    updated = condition(done["conditions"], "Updated")
    assert updated is not None and updated["lastTransitionTime"] == "2026-11-23T05:00:00Z"


# -- maintenance windows ------------------------------------------------------------------


def test_a_closed_window_holds_disruptive_updates_only() -> None:
    window = parse_window('{"days": ["Sat"], "start": "02:00", "duration": "4h"}')
    # Monday 2026-11-23 04:00 UTC: closed; next opens Saturday 2026-11-28 02:00
    state = window_state(window, datetime(2026, 11, 23, 4, 0, tzinfo=UTC), ZoneInfo("UTC"))
    assert not state.open
    assert state.opens_at == datetime(2026, 11, 28, 2, 0, tzinfo=ZoneInfo("UTC"))
    nodes = [node(n, V0, V0) for n in "abc"]
    costs = {"a": Cost.REBOOT, "b": Cost.RELOAD, "c": Cost.DRAIN}
    decision = plan_rollout(pool(max_unavailable=3), nodes, costs=costs, window=state)
    assert decision.targets == ("b",)
    assert decision.held == ("a", "c")
    strict = plan_rollout(
        pool(max_unavailable=3), nodes, costs=costs, window=state, rebootless_anytime=False
    )
    assert strict.targets == () and strict.blocked == WINDOW
    status = calculate_status(pool(), nodes, NOW, rollout=decision, window=state)
    mw = condition(status["conditions"], "MaintenanceWindow")
    assert mw is not None and mw["status"] == "False" and mw["reason"] == "WindowClosed"
    assert mw["message"] == "maintenance window closed; next opens at 2026-11-28T02:00+00:00"


def test_an_open_window_lets_everything_go() -> None:
    window = parse_window("days: [Mon]\nstart: '03:00'\nduration: 2h\ntimeZone: Europe/Berlin")
    # 04:00 UTC = 05:00 in Berlin (UTC+1 in November): open until 05:00 local
    state = window_state(
        window, datetime(2026, 11, 23, 3, 30, tzinfo=UTC), ZoneInfo("Europe/Berlin")
    )
    assert state.open
    assert state.closes_at is not None and state.closes_at.hour == 5
    nodes = [node("a", V0, V0)]
    decision = plan_rollout(pool(), nodes, costs={"a": Cost.REBOOT}, window=state)
    assert decision.targets == ("a",)


def test_a_window_spanning_midnight() -> None:
    window = parse_window('{"days": ["Sun"], "start": "23:00", "duration": "3h"}')
    monday_1am = datetime(2026, 11, 23, 1, 0, tzinfo=UTC)
    assert window_state(window, monday_1am, ZoneInfo("UTC")).open


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[1]", "value: expected an object"),
        ('{"start": "25:00", "duration": "1h"}', "start: expected HH:MM"),
        ('{"start": "02:00", "duration": "soon"}', "duration: expected a duration"),
        (
            '{"start": "02:00", "duration": "8d"}',
            "duration: must be more than 0 and at most 7 days",
        ),
        ('{"start": "02:00", "duration": "1h", "days": ["Caturday"]}', "days: unknown day"),
        ('{"start": "02:00", "duration": "1h", "rebootless": "never"}', "rebootless: expected"),
        ('{"start": "02:00", "duration": "1h", "zone": "UTC"}', "zone: unknown field"),
    ],
)
def test_window_errors_name_the_field(text: str, message: str) -> None:
    with pytest.raises(ValueError) as e:
        parse_window(text)
    assert str(e.value).startswith("annotation mcd-project.github.io/maintenance-window: ")
    assert message in str(e.value)


def test_node_view_reads_the_node() -> None:
    n = NodeView.of(
        {
            "metadata": {
                "name": "n",
                "annotations": {Annotation.CURRENT_CONFIG: V0, Annotation.DESIRED_CONFIG: V1,
                                Annotation.STATE: "Working"},
                "labels": {"topology.kubernetes.io/zone": "z1"},
            },
            "spec": {"unschedulable": True},
            "status": {"conditions": [{"type": "Ready", "status": "True"},
                                      {"type": "DiskPressure", "status": "True"}]},
        }
    )  # fmt: skip
    assert (n.current, n.desired, n.state, n.zone) == (V0, V1, "Working", "z1")
    assert not n.ready and n.not_ready_reason == "node n is reporting OutOfDisk=True"
    assert n.unavailable and not n.done


def test_an_invalid_max_unavailable_stops_the_rollout_and_says_why() -> None:
    p = pool(max_unavailable="50 percent")
    nodes = [node("a", V0, V0)]
    decision = plan_rollout(p, nodes)
    assert decision.targets == () and decision.error.startswith('maxUnavailable: invalid value "')
    updating = condition(
        calculate_status(p, nodes, NOW, rollout=decision)["conditions"], "Updating"
    )
    assert updating is not None
    assert updating["message"].endswith('; stopped: maxUnavailable: invalid value "50 percent"')
