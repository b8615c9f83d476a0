"""The ways out of a halted rollout (issue 40): a rollback reaches the node that failed, a
resume re-runs the failed nodes' health gates instead of halting again on their old failure,
a failure of a config the node left is over, and a pool held by its window or by its
unavailable nodes says so."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mcd.agent.safety import gateboots
from mcd.cli.fleet.report import fleet_report
from mcd.controller.conditions.window import WAITING, WindowWaits
from mcd.controller.policy import PolicyStep
from mcd.host.rootfs import Root
from mcd.model.node.health import (
    RETRY_ANNOTATION,
    STATE_ANNOTATION,
    retry_pending,
    retry_request,
    stale_state,
)
from mcd.model.pool.canary import HALT_ANNOTATION, HALTED, POLICY_ANNOTATION, WAVE, decide
from mcd.model.pool.canary import parse_policy as policy_of
from mcd.model.pool.pools import NodeView
from mcd.model.pool.render import render
from mcd.model.pool.rollout import (
    MAINTENANCE_WINDOW,
    NO_CAPACITY,
    Rollout,
    condition,
    plan_rollout,
    set_condition,
)
from mcd.model.pool.windows import WINDOW_ANNOTATION, WindowState
from mcd.model.vocabulary import Annotation
from tests.unit.test_controller_sync import NOW as MONDAY
from tests.unit.test_controller_sync import mc, sync
from tests.unit.test_controller_sync import node as worker_node
from tests.unit.test_controller_sync import pool as worker_pool

Obj = dict[str, Any]
NOW = datetime(2026, 11, 27, 10, 0, tzinfo=UTC)
STAMP = "2026-11-27T10:00:00Z"
OLD, BAD = "rendered-worker-old", "rendered-worker-bad"


def view(name: str, current: str, desired: str, state: str = "Done", **kw: Any) -> NodeView:
    return NodeView(name=name, current=current, desired=desired, state=state,
                    created=f"2026-01-01T00:00:0{name[-1]}Z", **kw)  # fmt: skip


def pool(target: str, **spec: Any) -> Obj:
    return {"metadata": {"name": "worker"},
            "spec": {"configuration": {"name": target}, **spec}}  # fmt: skip


# -- a rollback reaches the node that failed --------------------------------------------------


def test_a_failed_cordoned_node_on_an_old_target_goes_first_at_no_capacity() -> None:
    """The canary failed BAD, rolled back on disk, is Degraded and cordoned: the pool (max
    1 unavailable) rolls back to OLD. The canary holds the only slot, and upstream takes
    only schedulable nodes: it would wait for a hand uncordon. It goes now, and alone."""
    canary = view("w0", OLD, BAD, "Degraded", unschedulable=True, reason="health gate failed")
    nodes = [canary, view("w1", OLD, OLD), view("w2", OLD, BAD, "Done")]
    decision = plan_rollout(pool(OLD), nodes)
    assert decision.targets == ("w0",)
    assert decision.blocked == NO_CAPACITY  # w2 (told BAD, not started) waits for a slot
    assert decision.waiting == ("w2",)
    # NotReady and failing: the same
    down = view("w0", OLD, BAD, "Degraded", ready=False)
    assert plan_rollout(pool(OLD), [down, view("w1", OLD, OLD)]).targets == ("w0",)


def test_the_free_retarget_keeps_the_pause_the_halt_the_wave_and_the_window() -> None:
    canary = view("w0", OLD, BAD, "Degraded", unschedulable=True)
    nodes = [canary, view("w1", OLD, OLD)]
    assert plan_rollout(pool(OLD, paused=True), nodes).targets == ()
    assert plan_rollout(pool(OLD), nodes, halted=True).targets == ()
    assert plan_rollout(pool(OLD), nodes, only=frozenset({"w1"})).targets == ()
    closed = WindowState(False, NOW, None)
    held = plan_rollout(pool(OLD), nodes, window=closed, costs={"w0": None})
    assert (held.targets, held.held) == ((), ("w0",))


def test_a_rollback_to_the_pools_completed_config_has_no_canary_wave() -> None:
    policy = policy_of('{"canary": 1, "soak": "30m"}')
    nodes = [view("w0", OLD, BAD, "Degraded", unschedulable=True), view("w1", OLD, OLD)]
    kw: Any = {"labels": {}, "halted_for": "", "soak_since": None, "now": NOW}
    back = decide(policy, nodes, OLD, {}, completed=OLD, **kw)
    assert (back.only, back.phase, back.halted) == (None, "", False)
    forward = decide(policy, nodes, BAD, {}, completed=OLD, **kw)
    assert forward.phase == WAVE and forward.only is not None


# -- the health gate's retry ------------------------------------------------------------------


def gate_state(config: str, result: str, retry: str = "") -> str:
    doc = {"config": config, "result": result, "time": STAMP}
    return json.dumps({**doc, "retry": retry} if retry else doc)


def test_a_retry_is_pending_until_the_node_answers_it() -> None:
    request = retry_request(BAD, STAMP)
    failed_before = {RETRY_ANNOTATION: request, STATE_ANNOTATION: gate_state(BAD, "failed"),
                     Annotation.STATE: "Degraded"}  # fmt: skip
    assert retry_pending(failed_before, BAD)
    assert not retry_pending(failed_before, OLD)  # a request for another config
    fresh_failure = {**failed_before, STATE_ANNOTATION: gate_state(BAD, "failed", request)}
    assert not retry_pending(fresh_failure, BAD)
    passed_not_done = {**failed_before, STATE_ANNOTATION: gate_state(BAD, "passed", request)}
    assert retry_pending(passed_not_done, BAD)  # the Done follows the passing verdict
    assert not retry_pending({**passed_not_done, Annotation.STATE: "Done"}, BAD)
    assert not retry_pending({STATE_ANNOTATION: gate_state(BAD, "failed")}, BAD)


def test_a_failed_gate_of_a_config_the_node_left_is_stale() -> None:
    assert stale_state(gate_state(BAD, "failed"), OLD)
    assert not stale_state(gate_state(BAD, "failed"), BAD)
    assert not stale_state(gate_state(BAD, "passed"), OLD)
    assert not stale_state(None, OLD) and not stale_state("not json", OLD)


class Writer:
    def __init__(self) -> None:
        self.nodes: dict[str, Obj] = {}
        self.calls: list[tuple[str, ...]] = []

    def set_node_annotation(self, node: str, key: str, value: str | None) -> Obj:
        self.calls.append(("node", node, key))
        obj = self.nodes[node]
        obj["metadata"]["annotations"][key] = value
        return obj

    def set_pool_annotation(self, pool: str, key: str, value: str | None) -> Obj:
        self.calls.append(("pool", pool, key, str(value)))
        return {}

    def event(self, pool: Obj, reason: str, message: str, warning: bool = False) -> None:
        self.calls.append(("event", reason, message))


def kube_node(name: str, **annotations: str) -> Obj:
    return {"metadata": {"name": name, "annotations": dict(annotations)}}


def test_a_resume_asks_the_failed_canary_to_gate_again_and_does_not_halt_on_its_old_failure(
) -> None:  # fmt: skip
    writer = Writer()
    step = PolicyStep(writer)  # type: ignore[arg-type]
    failed = gate_state(BAD, "failed")
    writer.nodes = {
        "w0": kube_node("w0", **{STATE_ANNOTATION: failed, Annotation.STATE: "Degraded"}),
        "w1": kube_node("w1"),
    }
    views = [view("w0", OLD, BAD, "Degraded", reason="health gate failed"), view("w1", OLD, OLD)]
    halted_pool = pool(BAD)
    halted_pool["metadata"]["annotations"] = {POLICY_ANNOTATION: '{"canary": 1}'}
    conditions: list[Obj] = []
    set_condition(conditions, HALTED, True, "UnhealthyNodes", f"Rollout of {BAD} halted: ...",
                  STAMP)  # fmt: skip
    halted_pool["status"] = {"conditions": conditions}
    nodes: dict[str, Mapping[str, Any]] = dict(writer.nodes)
    # still annotated halted: nothing asked, halted
    gate, _ = step.gate({**halted_pool, "metadata": {**halted_pool["metadata"], "annotations": {
        **halted_pool["metadata"]["annotations"], HALT_ANNOTATION: BAD}}}, views, nodes, NOW)  # fmt: skip
    assert gate is not None and gate.halted and writer.calls == []
    # the operator took the annotation off: the canary is asked, the pool is not halted
    gate, _ = step.gate(halted_pool, views, nodes, NOW)
    assert gate is not None and not gate.halted and gate.retried == ("w0",)
    assert writer.calls == [("node", "w0", RETRY_ANNOTATION)]
    request = writer.nodes["w0"]["metadata"]["annotations"][RETRY_ANNOTATION]
    assert json.loads(request)["config"] == BAD
    found = list(conditions)
    step.report(halted_pool, gate, "", found, STAMP)
    resumed = next(c for c in found if c["type"] == HALTED)
    assert (resumed["status"], resumed["reason"]) == ("False", "Resumed")
    assert resumed["message"] == (f"rollout of {BAD} resumed; health gate re-run requested on w0 "
                                  "(their earlier failure no longer counts)")  # fmt: skip
    assert ("event", "RolloutResumed", "R" + resumed["message"][1:]) in writer.calls
    halted_pool["status"] = {"conditions": found}
    # the agent's fresh answer: it failed again, the pool halts again
    writer.nodes["w0"]["metadata"]["annotations"][STATE_ANNOTATION] = gate_state(
        BAD, "failed", request
    )
    gate, _ = step.gate(halted_pool, views, nodes, NOW)
    assert gate is not None and gate.halted and gate.newly_halted
    assert "w0" in gate.unhealthy


def test_a_node_moved_off_a_failed_config_does_not_halt_the_new_target() -> None:
    """A rollback retargets the failed canary: its Degraded reason is the old config's
    until its agent speaks, and does not halt the rollback's target."""
    step = PolicyStep(Writer())  # type: ignore[arg-type]
    back = pool(OLD)
    back["metadata"]["annotations"] = {POLICY_ANNOTATION: '{"canary": 1}'}
    before = [view("w0", OLD, BAD, "Degraded", reason="gate failed"), view("w1", OLD, OLD)]
    step.targeted(back, ("w0",), before)
    after = [view("w0", OLD, OLD, "Degraded", reason="gate failed"), view("w1", OLD, OLD)]
    nodes: dict[str, Mapping[str, Any]] = {"w0": kube_node("w0"), "w1": kube_node("w1")}
    gate, _ = step.gate(back, after, nodes, NOW)
    assert gate is not None and not gate.halted
    spoke = [view("w0", OLD, OLD, "Degraded", reason="a drift"), view("w1", OLD, OLD)]
    gate, _ = step.gate(back, spoke, nodes, NOW)  # a new failure on OLD counts
    assert gate is not None and gate.halted


# -- saying why a pool waits --------------------------------------------------------------------


def test_a_pool_waiting_for_its_window_says_so_once_in_an_event() -> None:
    writer, waits = Writer(), WindowWaits()
    closed = WindowState(False, NOW, None)
    held = Rollout(held=("w0", "w1"))
    for _ in range(3):
        waits(writer, pool(BAD), held, closed)  # type: ignore[arg-type]
    assert writer.calls == [("event", WAITING, "2 nodes wait for the maintenance window to "
                             f"update to {BAD} (maintenance window closed; next opens at "
                             "2026-11-27T10:00+00:00)")]  # fmt: skip
    waits(writer, pool(BAD), held, WindowState(True, None, NOW))  # type: ignore[arg-type]
    waits(writer, pool(BAD), held, closed)  # type: ignore[arg-type]
    assert len(writer.calls) == 2  # the next closed window is told again


def annotated(name: str, current: str, desired: str, state: str = "Done",
              unschedulable: bool = False) -> Obj:  # fmt: skip
    return {"metadata": {"name": name, "labels": {"node-role.kubernetes.io/worker": ""},
                         "annotations": {Annotation.CURRENT_CONFIG: current,
                                         Annotation.DESIRED_CONFIG: desired,
                                         Annotation.STATE: state}},
            "spec": {"unschedulable": unschedulable}}  # fmt: skip


def status_pool(target: str, **conditions: bool) -> Obj:
    p = pool(target, nodeSelector={"matchLabels": {"node-role.kubernetes.io/worker": ""}})
    found: list[Obj] = []
    for kind, value in conditions.items():
        set_condition(found, kind, value, "", "", STAMP)
    p["status"] = {"machineCount": 2, "updatedMachineCount": 1, "conditions": found}
    return p


def test_status_cluster_names_why_a_pool_is_stopped() -> None:
    cordoned = [annotated("w0", OLD, OLD, unschedulable=True), annotated("w1", OLD, OLD)]
    report = fleet_report([status_pool(BAD)], cordoned, NOW)
    assert report.pools[0].stopped == "max-unavailable"
    assert "no free slot: maxUnavailable is taken by w0 (cordoned)" in " ".join(
        report.pools[0].notes)  # fmt: skip
    assert report.next_step.startswith("kubectl uncordon w0   (pool worker: no node gets")
    updating = [annotated("w0", OLD, BAD, "Working"), annotated("w1", OLD, OLD)]
    assert fleet_report([status_pool(BAD)], updating, NOW).pools[0].stopped == ""
    told = [annotated("w0", OLD, BAD, "Done"), annotated("w1", OLD, OLD)]  # about to start
    assert fleet_report([status_pool(BAD)], told, NOW).pools[0].stopped == ""
    waiting = [annotated("w0", OLD, OLD), annotated("w1", OLD, OLD)]
    windowed = status_pool(BAD, **{MAINTENANCE_WINDOW: False})
    assert fleet_report([windowed], waiting, NOW).pools[0].stopped == "window"


def test_the_agent_honours_each_retry_request_once(tmp_path: Path) -> None:
    """Three failed gates of BAD: refused. A retry request starts the count afresh, once."""
    root = Root(tmp_path)
    for attempt in ("1", "2", "3"):
        gateboots.record_failure(root, BAD, attempt)
    assert gateboots.refused(root, BAD, 3).startswith(
        f"health gate failed 3 times after updates to {BAD}"
    )
    request = retry_request(BAD, STAMP)
    assert gateboots.honour_retry(root, request)
    assert gateboots.refused(root, BAD, 3) == ""
    for attempt in ("4", "5", "6"):
        gateboots.record_failure(root, BAD, attempt)
    assert not gateboots.honour_retry(root, request)  # the same request: not again
    assert gateboots.refused(root, BAD, 3) != ""
    assert gateboots.honour_retry(root, retry_request(BAD, "2026-11-27T11:00:00Z"))
    assert (tmp_path / gateboots.RETRY_PATH.lstrip("/")).stat().st_mode & 0o077 == 0


def test_a_pass_held_by_a_closed_window_says_so_in_updating_and_an_event() -> None:
    """The quick start's complaint: a weekday, a weekend window, nothing moves; the pool says
    why where a watcher looks (``Updating``, and an Event once)."""
    assert MONDAY.strftime("%a") == "Mon"
    old = render("worker", [mc("00-worker")])
    p = worker_pool(configuration={"name": old.name})
    p["metadata"]["annotations"][WINDOW_ANNOTATION] = (
        '{"days": ["Sat", "Sun"], "start": "01:00", "duration": "4h", "timeZone": "UTC"}'
    )
    configs = [mc("00-worker"), mc("50-new", kernelArguments=["b=2"]),
               {"metadata": {"name": old.name}, "spec": old.spec}]  # fmt: skip
    w, status = sync(p, configs, [worker_node("n0", old.name), worker_node("n1", old.name)])
    assert w.of("desired") == []
    updating = condition(status["conditions"], "Updating")
    assert updating is not None and updating["message"].endswith(
        "; 2 nodes wait for the maintenance window (maintenance window closed; next opens at "
        "2026-11-28T01:00+00:00)"
    )
    ((_reason, message),) = [e for e in w.of("event") if e[0] == WAITING]
    assert message.startswith("2 nodes wait for the maintenance window to update to rendered-")
