"""The health gate's Node Ready check (issue 19): passes on Ready=True, fails when the node
stays NotReady past the timeout, is skipped where no kubelet reports a Ready condition and
when the API server cannot be read at all (its outage is not the node's)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from mcd.agent.safety.health import node_ready_check
from mcd.cluster.api import ApiError
from mcd.model.node.health import Status


def node(status: str | None, reason: str = "KubeletNotReady") -> Mapping[str, object]:
    conditions = [] if status is None else [{"type": "Ready", "status": status, "reason": reason}]
    return {"status": {"conditions": [{"type": "MemoryPressure", "status": "False"}, *conditions]}}


def sequence(*answers: Mapping[str, object] | Exception) -> Callable[[], Mapping[str, object]]:
    seen = list(answers)

    def get() -> Mapping[str, object]:
        answer = seen.pop(0) if len(seen) > 1 else seen[0]
        if isinstance(answer, Exception):
            raise answer
        return answer

    return get


def test_ready_after_a_while_passes() -> None:
    check = node_ready_check(sequence(node("False"), node("Unknown"), node("True")), lambda s: None)
    assert check(60).status is Status.PASSED


def test_not_ready_past_the_timeout_fails_with_the_kubelets_reason() -> None:
    result = node_ready_check(sequence(node("False", "NetworkPluginNotReady")), lambda s: None)(0)
    assert result.status is Status.FAILED
    assert result.note == "Node not Ready after 0s: Ready=False (NetworkPluginNotReady)"


def test_no_ready_condition_or_no_api_server_is_skipped() -> None:
    skipped = node_ready_check(sequence(node(None)), lambda s: None)(60)
    assert (skipped.status, skipped.note) == (Status.SKIPPED, "the Node has no Ready condition")
    away = node_ready_check(sequence(ApiError(0, "", "connection refused")), lambda s: None)(0)
    assert (away.status, away.note) == (Status.SKIPPED, "cannot read the Node: ApiError")
