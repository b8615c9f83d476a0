"""What the agent writes on its Node about the last health gate (read back by ``mcd status``),
and when the node drains at all."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from mcd.model.node.health import CheckResult, Status, Verdict, describe_state, state_annotation
from mcd.model.vocabulary import SINGLE_REPLICA, Annotation, drain_required

WHEN = "2026-01-02T03:04:05Z"


def test_a_passed_gate_is_recorded_without_a_check() -> None:
    verdict = Verdict("rendered-worker-2", (CheckResult("kubelet", Status.PASSED),))
    value = state_annotation(verdict, WHEN)
    assert json.loads(value) == {"config": "rendered-worker-2", "result": "passed", "time": WHEN}
    assert " " not in value  # compact, as an annotation


def test_a_failed_gate_names_the_failed_check_and_never_its_output() -> None:
    failed = CheckResult("10-probe", Status.FAILED, note="secret output: hunter2")
    verdict = Verdict("rendered-worker-2", (CheckResult("kubelet", Status.PASSED), failed))
    value = state_annotation(verdict, WHEN)
    assert json.loads(value) == {
        "config": "rendered-worker-2",
        "result": "failed",
        "check": "10-probe",
        "time": WHEN,
    }
    assert "hunter2" not in value
    assert describe_state(value) == json.loads(value)


def test_reading_back_keeps_only_the_known_keys_and_refuses_what_is_not_ours() -> None:
    assert describe_state('{"config": "c", "result": "passed", "extra": 1, "time": 5}') == {
        "config": "c",
        "result": "passed",
        "time": "5",
    }
    assert describe_state("not json") is None
    assert describe_state('["config"]') is None
    assert describe_state("") is None


@settings(max_examples=50)
@given(st.text(min_size=1, max_size=30), st.booleans(), st.text(max_size=20))
def test_the_state_written_reads_back_the_same(config: str, ok: bool, check: str) -> None:
    results = (CheckResult(check, Status.PASSED if ok else Status.FAILED),)
    state = describe_state(state_annotation(Verdict(config, results), WHEN))
    assert state is not None
    assert state["config"] == config
    assert state["result"] == ("passed" if ok else "failed")
    assert ("check" in state) is (not ok)
    if not ok:
        assert state["check"] == check


def test_a_single_node_cluster_never_drains() -> None:
    assert not drain_required({Annotation.CONTROL_PLANE_TOPOLOGY: SINGLE_REPLICA})
    assert drain_required({Annotation.CONTROL_PLANE_TOPOLOGY: "HighlyAvailable"})
    assert drain_required({})  # topology unknown: drain, as upstream
