"""The rollout policy's gates (issue 44 item 3; kured's blockers): the policy parser, kured's
alert filter semantics on Prometheus' ``ALERTS`` answer, the pods that block a node, the
rollout's holds, and the controller step that lists pods and names the hold."""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from mcd.cluster.api import ApiError
from mcd.controller.holds.prometheus import AlertQuery, query_url
from mcd.controller.holds.step import MAX_CHECKS, HoldStep
from mcd.model.holds.gates import (
    ALERTS_FIRING,
    BLOCKING_PODS,
    GATE_KEYS,
    HELD,
    PROMETHEUS_UNREACHABLE,
    AlertGate,
    GateError,
    Gates,
    active_alerts,
    blocking_pods,
    parse_gates,
    shown_url,
)
from mcd.model.holds.selector import SelectorSyntaxError, parse_selector
from mcd.model.planning.plan import Cost
from mcd.model.pool.canary import _KEYS as POLICY_KEYS
from mcd.model.pool.canary import POLICY_ANNOTATION, parse_policy
from mcd.model.pool.pools import NodeView, selector_matches
from mcd.model.pool.rollout import HELD as ROLLOUT_HELD
from mcd.model.pool.rollout import Rollout, calculate_status, condition, plan_rollout
from mcd.model.pool.windows import WINDOW_ANNOTATION, parse_window
from tests.readme import sh_blocks
from tests.unit.test_controller_sync import Writer

Obj = dict[str, Any]
V0, V1 = "rendered-worker-v0", "rendered-worker-v1"
STAMP = "2026-11-23T04:00:00Z"


# -- the policy ------------------------------------------------------------------------------


def test_a_policy_reads_every_gate_and_the_canary_keys_stay_valid() -> None:
    text = json.dumps({
        "canary": 1,
        "blockingPods": ["app=db,tier in (a,b)", {"matchLabels": {"backup": "running"}}],
        "alerts": {"prometheusURL": "http://u:secret@prom:9090/", "filter": "^Watchdog$",
                   "matchOnly": False, "firingOnly": True},
    })  # fmt: skip
    gates = parse_gates(text)
    assert gates is not None
    assert gates.blocking_pods == (
        {"matchLabels": {"app": "db"},
         "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]},
        {"matchLabels": {"backup": "running"}},
    )  # fmt: skip
    assert gates.alerts == AlertGate("http://u:secret@prom:9090/", "^Watchdog$", False, True)
    assert parse_policy(text).canary_count == 1  # the canary's parser knows the gate keys
    described = gates.describe()
    assert "app=db,tier in (a,b)" in described and "secret" not in described
    assert shown_url("http://u:secret@prom:9090/x") == "http://prom:9090/x"
    assert parse_gates('{"canary": 1}') is None


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        ({"blockingPods": ""}, "blockingPods"),
        ({"blockingPods": "app in ()"}, "blockingPods"),
        ({"blockingPods": "app=(x)"}, "blockingPods"),
        ({"blockingPods": []}, "blockingPods"),
        ({"blockingPods": [{"matchLabels": {"a": 1}}]}, "blockingPods"),
        ({"blockingPods": {"matchExpressions": [{"key": "a", "operator": "Is"}]}},
         "blockingPods"),
        ({"blockingPods": 3}, "blockingPods"),
        ({"alerts": "http://prom"}, "alerts"),
        ({"alerts": {"prometheusURL": "ftp://prom"}}, "alerts.prometheusURL"),
        ({"alerts": {"prometheusURL": "http://prom?x=1"}}, "alerts.prometheusURL"),
        ({"alerts": {"prometheusURL": "http://prom", "filter": "("}}, "alerts.filter"),
        ({"alerts": {"prometheusURL": "http://prom", "firingOnly": "yes"}}, "alerts.firingOnly"),
        ({"alerts": {"prometheusURL": "http://prom", "url": "x"}}, "alerts.url"),
        ({"blockingPod": "a=b"}, "blockingPod"),
    ],
)  # fmt: skip
def test_a_bad_gate_names_the_field(doc: Obj, field: str) -> None:
    with pytest.raises(GateError) as e:
        parse_gates(json.dumps(doc))
    assert str(e.value).startswith(f"annotation {POLICY_ANNOTATION}: {field}:"), str(e.value)


LABEL = st.sampled_from(["app", "tier", "example.com/role", "a.b-c_d"])
VALUE = st.sampled_from(["", "db", "web", "x-1", "A.b_c"])


@st.composite
def requirement(draw: st.DrawFn) -> tuple[str, Obj]:
    """A selector requirement as kured's flag spells it, and as a LabelSelector expression."""
    key = draw(LABEL)
    kind = draw(st.sampled_from(["=", "==", "!=", "in", "notin", "exists", "!"]))
    if kind in ("=", "=="):
        value = draw(VALUE)
        return f"{key}{kind}{value}", {"key": key, "operator": "In", "values": [value]}
    if kind == "!=":
        value = draw(VALUE)
        return f"{key} != {value}", {"key": key, "operator": "NotIn", "values": [value]}
    if kind in ("in", "notin"):
        values = draw(st.lists(VALUE.filter(bool), min_size=1, max_size=3))
        op = "In" if kind == "in" else "NotIn"
        return f"{key} {kind} ({', '.join(values)})", {"key": key, "operator": op,
                                                      "values": values}  # fmt: skip
    if kind == "exists":
        return key, {"key": key, "operator": "Exists"}
    return f"!{key}", {"key": key, "operator": "DoesNotExist"}


@settings(max_examples=300, deadline=None)
@given(st.lists(requirement(), min_size=1, max_size=4),
       st.dictionaries(LABEL, VALUE, max_size=4))  # fmt: skip
def test_a_selector_string_matches_as_its_labelselector(
    parts: list[tuple[str, Obj]], labels: dict[str, str]
) -> None:
    """kured's ``--blocking-pod-selector`` spelling selects the pods its LabelSelector does."""
    text = ",".join(p for p, _ in parts)
    expected = {"matchExpressions": [e for _, e in parts]}
    gates = parse_gates(json.dumps({"blockingPods": text}))
    assert gates is not None
    (selector,) = gates.blocking_pods
    assert selector_matches(selector, labels) == selector_matches(expected, labels)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_any_selector_text_parses_or_is_refused_with_a_reason(text: str) -> None:
    try:
        parsed = parse_selector(text)
    except SelectorSyntaxError as e:
        assert str(e)
        return
    assert parsed and set(parsed) <= {"matchLabels", "matchExpressions"}
    selector_matches(parsed, {})


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=12), inner,
                                                                max_size=3),
    max_leaves=8,
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["blockingPods", "alerts"]), JSON)
def test_any_value_is_a_gate_or_a_gate_error(key: str, value: object) -> None:
    try:
        gates = parse_gates(json.dumps({key: value}))
    except GateError as e:
        assert str(e).startswith(f"annotation {POLICY_ANNOTATION}: ")
        return
    assert isinstance(gates, Gates)


# -- kured's alert semantics -------------------------------------------------------------------


def answer(*alerts: tuple[str, str], value: str = "1") -> Obj:
    return {"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": {"__name__": "ALERTS", "alertname": n, "alertstate": s}, "value": [1, value]}
        for n, s in alerts]}}  # fmt: skip


FIRING = answer(("Watchdog", "firing"), ("DiskFull", "firing"), ("NodeDown", "pending"),
                ("DiskFull", "pending"))  # fmt: skip


@pytest.mark.parametrize(
    ("filter_", "match_only", "firing_only", "expected"),
    [
        ("", False, False, ("DiskFull", "NodeDown", "Watchdog")),  # every active alert
        ("", False, True, ("DiskFull", "Watchdog")),  # --alert-firing-only
        ("^Watchdog$", False, False, ("DiskFull", "NodeDown")),  # the filter ignores
        ("^Watchdog$", True, False, ("Watchdog",)),  # --alert-filter-match-only
        ("Disk|Node", True, True, ("DiskFull",)),
    ],
)
def test_the_alerts_that_hold_are_kureds(
    filter_: str, match_only: bool, firing_only: bool, expected: tuple[str, ...]
) -> None:
    gate = AlertGate("http://prom:9090", filter_, match_only, firing_only)
    assert active_alerts(FIRING, gate) == expected


def test_a_zero_sample_or_a_bad_answer() -> None:
    gate = AlertGate("http://prom")
    assert active_alerts(answer(("A", "firing"), value="0"), gate) == ()
    with pytest.raises(ValueError, match="unexpected answer"):
        active_alerts({"status": "error", "error": "bad"}, gate)


def test_the_alert_query_is_kept_a_while_and_an_error_says_why() -> None:
    now = [0.0]
    asked: list[str] = []

    def fetch(url: str, timeout: float) -> Any:
        asked.append(url)
        if len(asked) == 3:
            raise OSError("[Errno 111] Connection refused")
        return answer(("DiskFull", "firing"))

    query = AlertQuery(ttl=10, error_ttl=30, clock=lambda: now[0], fetch=fetch)
    gate = AlertGate("http://prom:9090/")
    assert query(gate) == (("DiskFull",), "")
    assert query(AlertGate("http://prom:9090/", "Disk")) == ((), "")  # the same answer
    assert asked == [query_url("http://prom:9090")]
    assert asked[0] == "http://prom:9090/api/v1/query?query=ALERTS"
    now[0] = 11
    query(gate)
    now[0] = 22
    assert query(gate) == ((), "[Errno 111] Connection refused")
    now[0] = 50  # an error is kept longer (it holds: the safe side)
    assert query(gate) == ((), "[Errno 111] Connection refused") and len(asked) == 3
    now[0] = 53
    assert query(gate) == (("DiskFull",), "")


def test_pods_that_ended_do_not_block() -> None:
    def pod(name: str, phase: str, **labels: str) -> Obj:
        return {"metadata": {"namespace": "apps", "name": name, "labels": labels},
                "status": {"phase": phase}}  # fmt: skip

    pods = [pod("db-0", "Running", app="db"), pod("db-1", "Succeeded", app="db"),
            pod("db-2", "Pending", app="db"), pod("web", "Running", app="web"),
            pod("db-3", "Failed", app="db"), pod("db-4", "Unknown", app="db")]  # fmt: skip
    assert blocking_pods(pods, [{"matchLabels": {"app": "db"}}]) == ("apps/db-0", "apps/db-2")


# -- the rollout -----------------------------------------------------------------------------


def views(*names: str) -> list[NodeView]:
    return [NodeView(name=n, current=V0, desired=V0, state="Done", ready=True) for n in names]


POOL = {"metadata": {"name": "worker"}, "spec": {"configuration": {"name": V1},
                                                 "maxUnavailable": 1}}  # fmt: skip


def test_a_blocked_node_is_passed_over_and_the_next_goes() -> None:
    rollout = plan_rollout(POOL, views("a", "b", "c"), gated={"a"})
    assert rollout.targets == ("b",)
    assert rollout.gated == ("a",)


def test_a_pool_hold_stops_disruptive_updates_only() -> None:
    costs = {"a": Cost.REBOOT, "b": Cost.NONE, "c": None}
    rollout = plan_rollout(POOL, views("a", "b", "c"), costs=costs, hold="alerts")
    assert rollout.targets == ("b",)  # needs no drain and no reboot
    assert rollout.gated == ("a", "c")  # a reboot, and a cost nobody knows
    held = plan_rollout(POOL, views("a", "c"), costs=costs, hold="alerts")
    assert (held.targets, held.blocked) == ((), ROLLOUT_HELD)
    status = calculate_status(POOL, views("a", "c"), STAMP, rollout=held)
    updating = condition(status["conditions"], "Updating")
    assert updating is not None and "see RolloutHeld" in updating["message"]


# -- the controller's step -------------------------------------------------------------------


class Kube:
    def __init__(self, pods: dict[str, list[Obj]]) -> None:
        self.pods, self.asked = pods, list[str]()
        self.fail = False

    def request(self, method: str, path: str, query: Mapping[str, str] | None = None) -> Obj:
        node = (query or {})["fieldSelector"].removeprefix("spec.nodeName=")
        self.asked.append(node)
        if self.fail:
            raise ApiError(503, "Service Unavailable", "")
        return {"items": self.pods.get(node, [])}


def gated_pool(policy: Obj) -> Obj:
    return {**POOL, "metadata": {"name": "worker",
                                 "annotations": {POLICY_ANNOTATION: json.dumps(policy)}}}  # fmt: skip


def db(name: str) -> Obj:
    return {"metadata": {"namespace": "apps", "name": name, "labels": {"app": "db"}},
            "status": {"phase": "Running"}}  # fmt: skip


def step_with(pods: dict[str, list[Obj]], **kw: Any) -> tuple[HoldStep, Writer, Kube]:
    writer, kube = Writer(), Kube(pods)
    writer.kube = kube  # type: ignore[attr-defined]
    return HoldStep(writer, **kw), writer, kube  # type: ignore[arg-type]


def report(step: HoldStep, pool: Obj, rollout: Rollout, conditions: list[Obj]) -> Obj:
    step.report(pool, rollout, conditions, STAMP)
    return dict(condition(conditions, HELD) or {})


def test_the_step_lists_the_pods_of_the_nodes_taken_and_names_the_hold() -> None:
    now = [0.0]
    step, writer, kube = step_with({"a": [db("db-0")], "b": [db("db-1")]}, clock=lambda: now[0])
    pool = gated_pool({"blockingPods": "app=db"})
    nodes = views("a", "b", "c")

    def plan(hold: str, gated: Any) -> Rollout:
        return plan_rollout(pool, nodes, hold=hold, gated=gated)

    rollout = step.plan(pool, plan)
    assert rollout.targets == ("c",)
    assert kube.asked == ["a", "b", "c"]
    conditions: list[Obj] = []
    held = report(step, pool, rollout, conditions)
    assert (held["status"], held["reason"]) == ("True", BLOCKING_PODS)
    assert "node a: pods apps/db-0; node b: pods apps/db-1" in held["message"]
    assert writer.of("event") == [(BLOCKING_PODS, held["message"])]
    # c updating: no slot; a and b stay named, without listing again, and no new Event
    nodes[2] = NodeView(name="c", current=V0, desired=V1, state="Working", ready=True,
                        unschedulable=True)  # fmt: skip
    now[0] = 30
    kube.asked.clear()
    again = step.plan(pool, plan)
    assert (again.targets, kube.asked) == ((), [])
    assert report(step, pool, again, conditions)["reason"] == BLOCKING_PODS
    assert len(writer.of("event")) == 1
    # c done; a's pod gone: a is listed again and goes
    nodes[2] = NodeView(name="c", current=V1, desired=V1, state="Done", ready=True)
    kube.pods["a"] = []
    third = step.plan(pool, plan)
    assert third.targets == ("a",)
    assert "node a" not in report(step, pool, third, conditions)["message"]


def test_a_pod_listing_that_fails_blocks_as_kureds_does() -> None:
    step, _writer, kube = step_with({})
    kube.fail = True
    pool = gated_pool({"blockingPods": "app=db"})
    rollout = step.plan(pool, lambda h, g: plan_rollout(pool, views("a"), hold=h, gated=g))
    assert rollout.targets == ()
    held = report(step, pool, rollout, [])
    assert "could not be listed" in held["message"]


def test_firing_alerts_and_a_silent_prometheus_hold_the_pool_then_release() -> None:
    answers: list[Any] = [answer(("DiskFull", "firing")), OSError("timed out"),
                          answer(("Watchdog", "firing"))]  # fmt: skip

    def fetch(url: str, timeout: float) -> Any:
        got = answers.pop(0)
        if isinstance(got, Exception):
            raise got
        return got

    step, writer, _kube = step_with({}, alerts=AlertQuery(ttl=0, error_ttl=0, fetch=fetch))
    pool = gated_pool({"alerts": {"prometheusURL": "http://prom:9090", "filter": "Watchdog"}})

    def plan(hold: str, gated: Any) -> Rollout:
        return plan_rollout(pool, views("a", "b"), hold=hold, gated=gated)

    conditions: list[Obj] = []
    first = step.plan(pool, plan)
    held = report(step, pool, first, conditions)
    assert first.targets == () and held["reason"] == ALERTS_FIRING
    assert "1 active alert in Prometheus http://prom:9090: DiskFull" in held["message"]
    second = step.plan(pool, plan)
    held = report(step, pool, second, conditions)
    assert second.targets == () and held["reason"] == PROMETHEUS_UNREACHABLE
    assert "timed out" in held["message"]
    third = step.plan(pool, plan)
    assert third.targets == ("a",)
    assert report(step, pool, third, conditions)["status"] == "False"
    assert [r for r, _m in writer.of("event")] == [ALERTS_FIRING, PROMETHEUS_UNREACHABLE,
                                                   "RolloutHoldReleased"]  # fmt: skip


def test_a_bad_gate_holds_the_pool_and_a_pool_without_gates_has_no_condition() -> None:
    step, writer, _kube = step_with({})
    pool = gated_pool({"blockingPods": "app in ()"})
    rollout = step.plan(pool, lambda h, g: plan_rollout(pool, views("a"), hold=h, gated=g))
    held = report(step, pool, rollout, [])
    assert rollout.targets == () and held["reason"] == "InvalidPolicy"
    assert "the pool is held until it is fixed" in held["message"]
    assert parse_policy(json.dumps({"blockingPods": "app in ()"})).has_canary is False
    plain = {**POOL, "metadata": {"name": "worker"}}
    conditions = [{"type": HELD, "status": "True"}]
    free = step.plan(plain, lambda h, g: plan_rollout(plain, views("a"), hold=h, gated=g))
    assert free.targets == ("a",)
    assert report(step, plain, free, conditions) == {}
    assert writer.of("event")[0][0] == "InvalidPolicy"


def test_at_most_max_checks_nodes_are_listed_a_pass_the_rest_wait() -> None:
    step, _writer, kube = step_with({})
    pool = gated_pool({"blockingPods": "app=db"})
    pool["spec"] = {"configuration": {"name": V1}, "maxUnavailable": "100%"}
    nodes = views(*(f"n{i:02}" for i in range(MAX_CHECKS + 5)))
    rollout = step.plan(pool, lambda h, g: plan_rollout(pool, nodes, hold=h, gated=g))
    assert len(rollout.targets) == len(kube.asked) == MAX_CHECKS
    assert set(rollout.targets) == set(kube.asked)
    assert len(rollout.waiting) == 5 and not set(rollout.waiting) & set(rollout.targets)


def test_the_readmes_kured_example_parses() -> None:
    """README "Replacing kured": the annotations of its command block, as the controller reads
    them (the gates, the window; the OS reboot keys are the rollout policy's too)."""
    (block,) = sh_blocks("Replacing kured")
    words = shlex.split(block.replace("\\\n", " "))
    values = dict(w.split("=", 1) for w in words if w.startswith("mcd-project.github.io/"))
    policy = yaml.safe_load(values[POLICY_ANNOTATION])
    assert set(policy) <= POLICY_KEYS | {"osReboots", "osRebootInterval"}
    gates = parse_gates(json.dumps({k: v for k, v in policy.items() if k in GATE_KEYS}))
    assert gates is not None and gates.blocking_pods and gates.alerts is not None
    assert gates.alerts.counts("KubeNodeNotReady", "firing")
    assert not gates.alerts.counts("Watchdog", "firing")
    assert parse_window(values[WINDOW_ANNOTATION]).days == (5, 6)
