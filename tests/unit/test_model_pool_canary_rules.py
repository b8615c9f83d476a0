"""The rollout policy's edges (model/pool/canary): each field's bounds and its refusal in
words naming the field, the policy as `mcd status` describes it, the canary wave's order,
who is unhealthy and why, and the messages a halted or canary pool shows."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from mcd.model.pool.canary import (
    PASSED,
    SOAKING,
    WAVE,
    Gate,
    PolicyError,
    canary_nodes,
    crash_verdict,
    decide,
    parse_policy,
    pod_restarts,
    unhealthy_nodes,
)
from mcd.model.pool.pools import NodeView

NOW = datetime(2026, 11, 26, 10, 0, tzinfo=UTC)
OLD, NEW = "rendered-worker-old", "rendered-worker-new"
PREFIX = "annotation mcd-project.github.io/rollout-policy: "


def refusal(policy: dict[str, Any]) -> str:
    with pytest.raises(PolicyError) as e:
        parse_policy(json.dumps(policy))
    return str(e.value).removeprefix(PREFIX)


@pytest.mark.parametrize(
    ("policy", "described"),
    [
        ({}, "halt past 0 unhealthy updated nodes"),
        ({"canary": 1}, "canary: 1 node, soak 10m, halt past 0 unhealthy updated nodes"),
        ({"canary": 3, "soak": "2h", "maxUnhealthy": 2},
         "canary: 3 nodes, soak 2h, halt past 2 unhealthy updated nodes"),
        ({"canary": "10%", "soak": "45s", "maxUnhealthy": "20%"},
         "canary: 10% of the nodes, soak 45s, halt past 20% unhealthy updated nodes"),
        ({"canary": {"matchLabels": {"canary": "yes"}}, "soak": "1h30m"},
         "canary: nodes matching canary=yes, soak 90m, "
         "halt past 0 unhealthy updated nodes"),
        ({"maxUnhealthy": "0%"}, "halt past 0% unhealthy updated nodes"),
    ],
)  # fmt: skip
def test_a_policy_is_described_as_status_shows_it(policy: dict[str, Any], described: str) -> None:
    assert parse_policy(json.dumps(policy)).describe() == described


@pytest.mark.parametrize(
    ("policy", "field", "value"),
    [
        ({"canary": 100_000}, "canary_count", 100_000),
        ({"canary": "100%"}, "canary_percent", 100),
        ({"canary": "1%"}, "canary_percent", 1),
        ({"canary": {"matchExpressions": [{"key": "a", "operator": "Exists"}]}},
         "canary_selector", {"matchExpressions": [{"key": "a", "operator": "Exists"}]}),
        ({"maxUnhealthy": 0}, "max_unhealthy", 0),
        ({"maxUnhealthy": 100_000}, "max_unhealthy", 100_000),
        ({"maxUnhealthy": "100%"}, "max_unhealthy_percent", 100),
        ({"crashLoopRestarts": 1}, "crash_restarts", 1),
        ({"crashLoopRestarts": 10_000}, "crash_restarts", 10_000),
        ({"soak": "7d"}, "soak", timedelta(days=7)),
    ],
)  # fmt: skip
def test_each_field_takes_values_up_to_its_bound(
    policy: dict[str, Any], field: str, value: object
) -> None:
    assert getattr(parse_policy(json.dumps(policy)), field) == value


CANARY = (
    "canary: expected a number of nodes, a percentage such as 10%, or a label selector "
    "({matchLabels: ...}), got "
)
UNHEALTHY = "maxUnhealthy: expected a number or a percentage such as 10%, got "
RESTARTS = "crashLoopRestarts: expected a number from 1 to 10000, got "


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ({"canary": 100_001}, CANARY + "100001"),
        ({"canary": "101%"}, CANARY + "'101%'"),
        ({"canary": "0%"}, CANARY + "'0%'"),
        ({"canary": True}, CANARY + "True"),
        ({"canary": {}}, CANARY + "{}"),
        ({"canary": "x" * 100}, CANARY + "'" + "x" * 59 + "...'"),
        ({"canary": "y" * 62}, CANARY + "'" + "y" * 62 + "'"),
        ({"canary": {"matchLabels": {"a": "b"}, "x": 1}},
         "canary: a label selector has only matchLabels, matchExpressions"),
        ({"canary": {"matchExpressions": [{"key": "a", "operator": "In", "values": ["x"]}],
                     "nodeSelector": {}}},
         "canary: a label selector has only matchLabels, matchExpressions"),
        ({"canary": {"matchExpressions": [{"key": "a", "operator": "Near"}]}},
         'canary: invalid label selector: "Near" is not a valid label selector operator'),
        ({"soak": "forever"}, "soak: expected a duration such as 90m, 4h or 1h30m, got 'forever'"),
        ({"soak": "8d"}, "soak: must be more than 0 and at most 7 days"),
        ({"maxUnhealthy": 100_001}, UNHEALTHY + "100001"),
        ({"maxUnhealthy": "101%"}, UNHEALTHY + "'101%'"),
        ({"maxUnhealthy": False}, UNHEALTHY + "False"),
        ({"maxUnhealthy": None}, UNHEALTHY + "None"),
        ({"crashLoopRestarts": 0}, RESTARTS + "0"),
        ({"crashLoopRestarts": 10_001}, RESTARTS + "10001"),
        ({"crashLoopRestarts": "3"}, RESTARTS + "'3'"),
        ({"crashLoopRestarts": True}, RESTARTS + "True"),
    ],
)  # fmt: skip
def test_a_value_out_of_bounds_is_refused_naming_field_and_value(
    policy: dict[str, Any], message: str
) -> None:
    assert refusal(policy) == message


@pytest.mark.parametrize(("percent", "total", "limit"), [(10, 25, 2), (50, 3, 1), (100, 7, 7),
                                                         (33, 100, 33), (1, 99, 0)])  # fmt: skip
def test_a_percentage_limit_rounds_down(percent: int, total: int, limit: int) -> None:
    policy = parse_policy(json.dumps({"maxUnhealthy": f"{percent}%"}))
    assert policy.unhealthy_limit(total) == limit


def view(name: str, desired: str = OLD, current: str = OLD, state: str = "Done",
         created: str = "2026-01-01T00:00:00Z", **kw: Any) -> NodeView:  # fmt: skip
    return NodeView(name=name, current=current, desired=desired, state=state, created=created,
                    **kw)  # fmt: skip


def test_the_wave_takes_nodes_done_on_the_target_then_given_it_then_the_oldest() -> None:
    views = [
        view("a", created="2026-01-01T00:00:00Z"),
        view("b", created="2026-01-02T00:00:00Z", desired=NEW),
        view("c", created="2026-01-03T00:00:00Z", desired=NEW, current=NEW),
        view("d", created="2026-01-04T00:00:00Z"),
    ]
    assert canary_nodes(parse_policy('{"canary": 3}'), views, NEW, {}) == ("c", "b", "a")
    assert canary_nodes(parse_policy('{"canary": 4}'), views, NEW, {}) == ("c", "b", "a", "d")
    assert canary_nodes(parse_policy('{"canary": "50%"}'), views, NEW, {}) == ("c", "b")


def test_a_label_wave_keeps_upstream_order() -> None:
    policy = parse_policy('{"canary": {"matchLabels": {"canary": "yes"}}}')
    views = [view("late", created="2026-02-01T00:00:00Z"), view("early"), view("other")]
    labels = {"late": {"canary": "yes"}, "early": {"canary": "yes"}, "other": {}}
    assert canary_nodes(policy, views, NEW, labels) == ("early", "late")


def test_only_nodes_given_the_target_are_judged_and_each_says_why() -> None:
    views = [
        view("old", state="Degraded"),
        view("deg", desired=NEW, state="Degraded"),
        view("unrec", desired=NEW, state="Unreconcilable", reason="ssh keys"),
        view("nr", desired=NEW, ready=False),
        view("gate", desired=NEW, current=NEW),
        view("crash", desired=NEW, current=NEW),
        view("fine", desired=NEW, current=NEW),
    ]
    found = unhealthy_nodes(views, NEW, {"gate": ""}, {"crash": "pods crash-looping (a/b)"})
    assert found == {
        "deg": "Degraded",
        "unrec": "Unreconcilable: ssh keys",
        "nr": "NotReady",
        "gate": "health gate failed",
        "crash": "pods crash-looping (a/b)",
    }
    assert unhealthy_nodes(views, "", {}, {}) == {}


@pytest.mark.parametrize(
    ("looping", "shown"),
    [
        (("a/1",), "a/1"),
        (("a/1", "a/2", "a/3"), "a/1, a/2, a/3"),
        (("a/1", "a/2", "a/3", "a/4"), "a/1, a/2, a/3 and 1 more"),
        (("a/1", "a/2", "a/3", "a/4", "a/5", "a/6"), "a/1, a/2, a/3 and 3 more"),
    ],
)
def test_a_crash_verdict_names_three_pods_then_counts(looping: tuple[str, ...], shown: str) -> None:
    assert (
        crash_verdict(0, 3, looping, 3)
        == f"pods crash-looping ({shown}; 3 restarts since the update)"
    )


def test_a_halt_without_named_nodes_says_it_was_earlier() -> None:
    assert Gate(halted=True).halt_message(NEW, "infra") == (
        f"Rollout of {NEW} halted: 0 unhealthy updated nodes (halted earlier). To resume once "
        "fixed: kubectl annotate machineconfigpool infra mcd-project.github.io/rollout-halted- "
        "(or roll back: mcd rollback --pool infra)"
    )


@pytest.mark.parametrize(("count", "names"), [(1, "n00"), (10, ", ".join(f"n{i:02}" for i in range(10))),
                                              (12, ", ".join(f"n{i:02}" for i in range(10)) + " and 2 more")])  # fmt: skip
def test_the_canary_message_names_ten_nodes_in_each_phase(count: int, names: str) -> None:
    wave = tuple(f"n{i:02}" for i in range(count))
    assert Gate(canary=wave, phase=WAVE).canary_message(NEW) == (
        f"canary {names} updating to {NEW}; the other nodes wait"
    )
    soaking = Gate(canary=wave, phase=SOAKING, soak_until=NOW + timedelta(seconds=90.5))
    assert soaking.canary_message(NEW) == (
        f"canary {names} on {NEW}; soaking until 2026-11-26T10:01:30+00:00, then the rest"
    )
    assert Gate(canary=wave, phase=PASSED, soak_until=NOW).canary_message(NEW) == (
        f"canary {names} passed on {NEW}"
    )
    assert Gate(canary=wave, phase=SOAKING).canary_message(NEW) == f"canary {names} passed on {NEW}"


def test_every_gate_carries_the_unhealthy_nodes_and_a_passed_canary_its_wave() -> None:
    policy = parse_policy('{"canary": 1, "soak": "10m", "maxUnhealthy": 1}')
    bad = {"w9": "NotReady"}
    fresh = [view("w0"), view("w1")]
    done = [view("w0", NEW, NEW), view("w1")]
    kw: dict[str, Any] = {"labels": {}, "halted_for": ""}
    waiting = decide(policy, fresh, NEW, bad, soak_since=None, now=NOW, **kw)
    assert (waiting.phase, waiting.canary, dict(waiting.unhealthy)) == (WAVE, ("w0",), bad)
    soaking = decide(policy, done, NEW, bad, soak_since=None, now=NOW, **kw)
    assert (soaking.phase, soaking.canary, dict(soaking.unhealthy)) == (SOAKING, ("w0",), bad)
    later = NOW + timedelta(minutes=11)
    passed = decide(policy, done, NEW, bad, soak_since=NOW, now=later, **kw)
    assert (passed.phase, passed.canary, passed.only, dict(passed.unhealthy)) == (
        PASSED, ("w0",), None, bad)  # fmt: skip
    assert passed.soak_until == NOW + timedelta(minutes=10)
    plain = decide(parse_policy('{"maxUnhealthy": 1}'), done, NEW, bad, soak_since=None, now=NOW, labels={},
                   halted_for="")  # fmt: skip
    assert (plain.phase, plain.halted, dict(plain.unhealthy)) == ("", False, bad)


def test_a_percentage_limit_is_of_the_whole_pool() -> None:
    policy = parse_policy('{"maxUnhealthy": "50%"}')
    views = [view(f"w{i}", NEW, NEW) for i in range(4)]
    two = {"w0": "NotReady", "w1": "NotReady"}
    three = {**two, "w2": "NotReady"}
    kw: dict[str, Any] = {"labels": {}, "halted_for": "", "soak_since": None, "now": NOW}
    assert not decide(policy, views, NEW, two, **kw).halted
    assert decide(policy, views, NEW, three, **kw).halted


def test_restarts_count_init_containers_and_skip_odd_entries() -> None:
    pods: list[dict[str, Any]] = [
        {"metadata": {"name": "web"}, "status": {
            "containerStatuses": ["?", {"restartCount": 2, "state": {"running": {}}},
                                  {"restartCount": -5}, {"restartCount": "7"}, {}],
            "initContainerStatuses": [
                {"restartCount": 3, "state": {"waiting": {"reason": "CrashLoopBackOff"}}},
                {"restartCount": 0, "state": {"waiting": {"reason": "ImagePullBackOff"}}}]}},
        {"metadata": {"namespace": "ns"}, "status": {"containerStatuses": [
            {"restartCount": 1, "state": {"waiting": {"reason": "CrashLoopBackOff"}}},
            {"restartCount": 1, "state": {"running": {}}}]}},
        {"status": None},
    ]  # fmt: skip
    assert pod_restarts(pods) == (7, ("/web", "ns/"))
