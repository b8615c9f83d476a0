"""The rollout policy's decisions (:mod:`mcd.model.pool.canary`) as pure functions."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcd.controller.preview import describe_pool_summary, node_pool_summary
from mcd.model.pool.canary import (
    PASSED,
    SOAKING,
    WAVE,
    PolicyError,
    canary_nodes,
    crash_verdict,
    decide,
    parse_policy,
    pod_restarts,
    unhealthy_nodes,
)
from mcd.model.pool.pools import NodeView
from mcd.model.pool.rollout import CANARY_WAVE, HALTED, plan_rollout

NOW = datetime(2026, 11, 26, 10, 0, tzinfo=UTC)
OLD, NEW = "rendered-worker-old", "rendered-worker-new"


def node(
    i: int, current: str = OLD, desired: str = OLD, state: str = "Done", **kw: object
) -> NodeView:
    return NodeView(name=f"w{i}", current=current, desired=desired, state=state,
                    created=f"2026-01-0{i + 1}T00:00:00Z", **kw)  # type: ignore[arg-type]  # fmt: skip


def pool() -> dict[str, object]:
    return {"metadata": {"name": "worker"}, "spec": {"configuration": {"name": NEW}}}


def test_a_policy_reads_every_field() -> None:
    p = parse_policy('{"canary": "25%", "soak": "30m", "maxUnhealthy": 1, "crashLoopRestarts": 5}')
    assert (p.canary_percent, p.soak, p.max_unhealthy, p.crash_restarts) == (
        25, timedelta(minutes=30), 1, 5)  # fmt: skip
    assert p.describe() == "canary: 25% of the nodes, soak 30m, halt past 1 unhealthy updated nodes"
    assert parse_policy("canary: {matchLabels: {canary: 'true'}}").canary_selector == {
        "matchLabels": {"canary": "true"}}  # fmt: skip
    assert parse_policy('{"maxUnhealthy": "10%"}').unhealthy_limit(25) == 2


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ('{"canary": 0}', "canary"),
        ('{"canary": "150%"}', "canary"),
        ('{"canary": {"matchLabels": {"a": "b"}, "x": 1}}', "canary"),
        ('{"canary": {"matchExpressions": [{"key": "a", "operator": "Near"}]}}', "canary"),
        ('{"soak": "forever"}', "soak"),
        ('{"maxUnhealthy": -1}', "maxUnhealthy"),
        ('{"maxUnhealthy": true}', "maxUnhealthy"),
        ('{"crashLoopRestarts": 0}', "crashLoopRestarts"),
        ('{"canery": 1}', "canery"),
        ("[1]", "value"),
        ("a: &x [1]\nb: *x", "value"),
    ],
)
def test_a_bad_policy_names_the_field(text: str, field: str) -> None:
    with pytest.raises(PolicyError) as e:
        parse_policy(text)
    assert str(e.value).startswith(f"annotation mcd-project.github.io/rollout-policy: {field}: ")


@given(st.text(max_size=200))
def test_any_text_is_a_policy_or_one_policy_error(text: str) -> None:
    try:
        parse_policy(text)
    except PolicyError as e:
        assert "\n" not in str(e)


@given(st.integers(1, 40), st.integers(1, 100))
def test_a_percentage_canary_is_at_least_one_and_never_the_whole_pool_by_rounding(
    total: int, percent: int
) -> None:
    views = [NodeView(name=f"n{i}", current=OLD, desired=OLD, state="Done") for i in range(total)]
    wave = canary_nodes(parse_policy(json.dumps({"canary": f"{percent}%"})), views, NEW, {})
    assert 1 <= len(wave) <= total
    assert len(wave) == max(1, -(-percent * total // 100))


def test_the_wave_stays_the_same_while_it_rolls() -> None:
    policy = parse_policy('{"canary": 1}')
    views = [node(0), node(1), node(2)]
    assert canary_nodes(policy, views, NEW, {}) == ("w0",)
    # w1 got there first (say by hand): it is the wave now, and stays it once Done
    views = [node(0), node(1, NEW, NEW), node(2)]
    assert canary_nodes(policy, views, NEW, {}) == ("w1",)


def test_a_label_canary() -> None:
    policy = parse_policy('{"canary": {"matchLabels": {"canary": "yes"}}}')
    views = [node(0), node(1), node(2)]
    assert canary_nodes(policy, views, NEW, {"w2": {"canary": "yes"}}) == ("w2",)


def test_unhealthy_names_each_node_and_why() -> None:
    views = [
        node(0, OLD, NEW, "Degraded", reason="boom"),
        node(1, NEW, NEW, ready=False, not_ready_reason="node w1 is reporting NotReady=False"),
        node(2, NEW, NEW),
        node(3, NEW, NEW),
        node(4, OLD, OLD, "Degraded", reason="not given the target: not counted"),
    ]
    found = unhealthy_nodes(views, NEW, {"w2": "kubelet"}, {"w3": "pods crash-looping (a/b)"})
    assert found == {
        "w0": "Degraded: boom",
        "w1": "node w1 is reporting NotReady=False",
        "w2": "health gate failed (kubelet)",
        "w3": "pods crash-looping (a/b)",
    }


def test_crash_loops_count_only_past_the_baseline() -> None:
    assert crash_verdict(None, 50, ("a/b",), 3) == ""  # no baseline: no verdict
    assert crash_verdict(10, 12, ("a/b",), 3) == ""  # crashed before as much
    assert crash_verdict(10, 20, (), 3) == ""  # restarted, but not looping now
    assert (
        crash_verdict(10, 13, ("a/b",), 3)
        == "pods crash-looping (a/b; 3 restarts since the update)"
    )


def test_pod_restarts_sums_and_names_the_looping_pods() -> None:
    pods = [
        {"metadata": {"namespace": "app", "name": "web"}, "status": {"containerStatuses": [
            {"restartCount": 4, "state": {"waiting": {"reason": "CrashLoopBackOff"}}},
            {"restartCount": 1, "state": {"running": {}}}]}},
        {"metadata": {"namespace": "app", "name": "db"}, "status": {"containerStatuses": [
            {"restartCount": 2, "state": {"running": {}}}]}},
        {"metadata": {"namespace": "x", "name": "odd"}, "status": {"containerStatuses": ["?"]}},
    ]  # fmt: skip
    assert pod_restarts(pods) == (7, ("app/web",))


def test_past_the_limit_the_pool_halts_and_stays_halted() -> None:
    policy = parse_policy('{"maxUnhealthy": 1}')
    views = [node(0, NEW, NEW), node(1, NEW, NEW), node(2)]
    one = {"w0": "Degraded"}
    assert not decide(policy, views, NEW, one, labels={}, halted_for="", soak_since=None,
                      now=NOW).halted  # fmt: skip
    two = {"w0": "Degraded", "w1": "NotReady"}
    gate = decide(policy, views, NEW, two, labels={}, halted_for="", soak_since=None, now=NOW)
    assert gate.halted and gate.newly_halted
    assert "w0: Degraded; w1: NotReady" in gate.halt_message(NEW, "worker")
    assert "kubectl annotate machineconfigpool worker mcd-project.github.io/rollout-halted-" in (
        gate.halt_message(NEW, "worker"))  # fmt: skip
    # recorded: still halted once the nodes recover; a new target is a new rollout
    again = decide(policy, views, NEW, {}, labels={}, halted_for=NEW, soak_since=None, now=NOW)
    assert again.halted and not again.newly_halted
    assert not decide(policy, views, "rendered-worker-fixed", {}, labels={}, halted_for=NEW,
                      soak_since=None, now=NOW).halted  # fmt: skip


def test_the_canary_goes_first_then_soaks_then_the_rest() -> None:
    policy = parse_policy('{"canary": 1, "soak": "10m"}')
    fresh = [node(0), node(1), node(2)]
    gate = decide(policy, fresh, NEW, {}, labels={}, halted_for="", soak_since=None, now=NOW)
    assert (gate.phase, gate.only) == (WAVE, frozenset({"w0"}))
    rollout = plan_rollout(pool(), fresh, only=gate.only)
    assert rollout.targets == ("w0",)
    done = [node(0, NEW, NEW), node(1), node(2)]
    gate = decide(policy, done, NEW, {}, labels={}, halted_for="", soak_since=None, now=NOW)
    assert (gate.phase, gate.soak_until) == (SOAKING, NOW + timedelta(minutes=10))
    soaking = plan_rollout(pool(), done, only=gate.only)
    assert (soaking.targets, soaking.blocked) == ((), CANARY_WAVE)
    later = NOW + timedelta(minutes=10)
    gate = decide(policy, done, NEW, {}, labels={}, halted_for="", soak_since=NOW, now=later)
    assert (gate.phase, gate.only) == (PASSED, None)
    assert plan_rollout(pool(), done, only=gate.only).targets == ("w1",)


def test_a_canary_failing_during_the_soak_halts() -> None:
    policy = parse_policy('{"canary": 1, "soak": "10m"}')
    done = [node(0, NEW, NEW), node(1), node(2)]
    bad = {"w0": "pods crash-looping (app/web; 5 restarts since the update)"}
    gate = decide(policy, done, NEW, bad, labels={}, halted_for="", soak_since=NOW, now=NOW)
    assert gate.halted
    rollout = plan_rollout(pool(), done, halted=gate.halted, only=gate.only)
    assert (rollout.targets, rollout.blocked, rollout.waiting) == ((), HALTED, ("w1", "w2"))


@given(st.lists(st.sampled_from(["old", "given", "done", "bad"]), min_size=1, max_size=12),
       st.integers(1, 5), st.integers(0, 3))  # fmt: skip
def test_no_node_outside_the_wave_is_targeted_before_the_canary_passed(
    states: list[str], count: int, limit: int
) -> None:
    policy = parse_policy(json.dumps({"canary": count, "soak": "1h", "maxUnhealthy": limit}))
    views, bad = [], {}
    for i, s in enumerate(states):
        desired = OLD if s == "old" else NEW
        current = NEW if s in ("done", "bad") else OLD
        views.append(NodeView(name=f"n{i:02}", current=current, desired=desired, state="Done",
                              created=f"2026-01-01T00:00:{i:02}Z"))  # fmt: skip
        if s == "bad":
            bad[f"n{i:02}"] = "NotReady"
    gate = decide(policy, views, NEW, bad, labels={}, halted_for="", soak_since=None, now=NOW)
    p = {"metadata": {"name": "w"}, "spec": {"configuration": {"name": NEW}, "maxUnavailable": 12}}
    rollout = plan_rollout(p, views, halted=gate.halted, only=gate.only)
    if len(bad) > limit:
        assert gate.halted and rollout.targets == ()
    else:
        assert set(rollout.targets) <= set(gate.canary)


def test_plan_and_status_say_what_resumes_a_halted_pool() -> None:
    halted_pool = {
        "metadata": {"name": "worker", "annotations": {
            "mcd-project.github.io/rollout-policy": '{"canary": 1, "soak": "1h"}',
            "mcd-project.github.io/rollout-halted": NEW}},
        "spec": {"configuration": {"name": NEW},
                 "nodeSelector": {"matchLabels": {"node-role.kubernetes.io/worker": ""}}},
    }  # fmt: skip
    node_obj = {"metadata": {"name": "w0", "labels": {"node-role.kubernetes.io/worker": ""}}}
    lines = describe_pool_summary(node_pool_summary(node_obj, [halted_pool]))
    assert "Rollout policy:  canary: 1 node, soak 1h, halt past 0 unhealthy updated nodes" in lines
    assert (
        f"Halted:          rollout of {NEW} halted; to resume: kubectl annotate "
        "machineconfigpool worker mcd-project.github.io/rollout-halted-"
    ) in lines
    bad = {**halted_pool, "metadata": {"name": "worker", "annotations": {
        "mcd-project.github.io/rollout-policy": '{"soak": "soon"}'}}}  # fmt: skip
    (policy_line,) = [x for x in describe_pool_summary(node_pool_summary(node_obj, [bad]))
                      if x.startswith("Rollout policy")]  # fmt: skip
    assert "invalid: annotation mcd-project.github.io/rollout-policy: soak: " in policy_line
