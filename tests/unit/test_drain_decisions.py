"""The drain's pure decisions (:mod:`mcd.model.drain`), table by table: which pods go (kubectl
drain's filters), upstream's retry cadence on a fake clock, the pool's drain-timeout setting,
and the wording of what blocks a drain."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from mcd.model.drain.cadence import Cadence, after_failure, attempt_start, go_duration, go_minutes
from mcd.model.drain.pods import Disposition, choose, classify
from mcd.model.drain.report import blocked_condition, blocked_reason, not_evicted, terminating
from mcd.model.drain.settings import DRAIN_TIMEOUT_ANNOTATION, drain_settings, parse_timeout

DS = {"kind": "DaemonSet", "name": "agent", "controller": True}
RS = {"kind": "ReplicaSet", "name": "web-1", "controller": True}


def pod(
    name: str,
    owners: list[dict[str, Any]] | None = None,
    phase: str = "Running",
    annotations: dict[str, str] | None = None,
    volumes: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns", "ownerReferences": owners or [],
                     "annotations": annotations or {}},
        "spec": {"volumes": volumes or []},
        "status": {"phase": phase},
    }  # fmt: skip


POD_CASES = [
    ("replicated", pod("a", [RS]), Disposition.EVICT, False, False),
    ("daemonset", pod("a", [DS]), Disposition.DAEMONSET, False, False),
    ("daemonset, not controller", pod("a", [{**DS, "controller": False}]), Disposition.EVICT,
     False, True),
    ("mirror", pod("a", annotations={"kubernetes.io/config.mirror": "x"}), Disposition.MIRROR,
     False, False),
    ("succeeded", pod("a", [RS], phase="Succeeded"), Disposition.FINISHED, False, False),
    ("failed", pod("a", phase="Failed"), Disposition.FINISHED, False, False),
    ("emptyDir", pod("a", [RS], volumes=[{"name": "c", "emptyDir": {}}]), Disposition.EVICT,
     True, False),
    ("no controller", pod("a"), Disposition.EVICT, False, True),
    ("pending", pod("a", [RS], phase="Pending"), Disposition.EVICT, False, False),
]  # fmt: skip


@pytest.mark.parametrize(("pod_", "disposition", "local", "unmanaged"),
                         [c[1:] for c in POD_CASES], ids=[c[0] for c in POD_CASES])  # fmt: skip
def test_which_pods_a_drain_evicts(
    pod_: dict[str, Any], disposition: Disposition, local: bool, unmanaged: bool
) -> None:
    choice = classify(pod_)
    assert (choice.disposition, choice.local_storage, choice.unmanaged) == (
        disposition, local, unmanaged)  # fmt: skip


def test_the_drain_list_and_kubectls_warnings() -> None:
    pods = [pod("web", [RS]), pod("agent", [DS]), pod("job", [RS], phase="Succeeded"),
            pod("cache", [RS], volumes=[{"emptyDir": {}}]), pod("bare")]  # fmt: skip
    chosen = choose(pods)
    assert [p["metadata"]["name"] for p in chosen.evict] == ["web", "cache", "bare"]
    assert chosen.warnings() == [
        "ignoring DaemonSet-managed Pods: ns/agent",
        "not evicting finished Pods: ns/job",
        "deleting Pods with local storage: ns/cache",
        "deleting Pods that declare no controller: ns/bare",
    ]


MINUTE = 60.0
CADENCE = Cadence()
# (drain began at, attempt starts at, delay after a failure, DrainThresholdExceeded, DrainFailed)
CADENCE_CASES = [
    ("first attempt", None, 0.0, MINUTE, False, False),
    ("after 1 minute", 0.0, 1 * MINUTE, MINUTE, False, False),
    ("at 10 minutes exactly", 0.0, 10 * MINUTE, MINUTE, False, False),
    ("past 10 minutes", 0.0, 10 * MINUTE + 1, 5 * MINUTE, True, False),
    ("at 1 hour exactly", 0.0, 60 * MINUTE, 5 * MINUTE, True, False),
    ("past 1 hour", 0.0, 60 * MINUTE + 1, 5 * MINUTE, True, True),
    ("a day in", 0.0, 24 * 60 * MINUTE, 5 * MINUTE, True, True),
]


@pytest.mark.parametrize(("began", "now", "delay", "threshold", "failed"),
                         [c[1:] for c in CADENCE_CASES], ids=[c[0] for c in CADENCE_CASES])  # fmt: skip
def test_upstream_cadence_on_a_fake_clock(
    began: float | None, now: float, delay: float, threshold: bool, failed: bool
) -> None:
    start = attempt_start(CADENCE, "worker-0", began, now)
    retry = after_failure(CADENCE, start.elapsed, "E")
    assert (retry.delay, retry.threshold_exceeded, start.timed_out) == (delay, threshold, failed)


def test_a_drain_followed_minute_by_minute_for_two_hours() -> None:
    """A clock that only moves when told: the attempts a blocked drain makes, and the Events."""
    clock, began, attempts, events = 0.0, None, [], []
    while clock < 2 * 3600:
        start = attempt_start(CADENCE, "w", began, clock)
        began = clock if began is None else began
        if start.timed_out:
            events.append(("DrainFailed", clock))
        retry = after_failure(CADENCE, start.elapsed, "E")
        if retry.threshold_exceeded:
            events.append(("DrainThresholdExceeded", clock))
        attempts.append(clock)
        clock += CADENCE.attempt + retry.delay
    first_slow = next(t for r, t in events if r == "DrainThresholdExceeded")
    first_failed = next(t for r, t in events if r == "DrainFailed")
    assert 600 < first_slow <= 600 + 150 and 3600 < first_failed <= 3600 + 390
    gaps = [b - a for a, b in itertools.pairwise(attempts)]
    assert set(gaps[:4]) == {150.0} and set(gaps[-5:]) == {390.0}


def test_upstream_wording() -> None:
    assert after_failure(CADENCE, 11 * MINUTE, "E").message == (
        "Drain failed. Drain has been failing for more than 10 minutes. Waiting 5 minutes then "
        "retrying. Error message from drain: E"
    )
    assert after_failure(CADENCE, 0, "E").message == (
        "Drain failed. Waiting 1 minute then retrying. Error message from drain: E"
    )
    assert attempt_start(CADENCE, "w", 0.0, 3601).message == (
        "node w: drain exceeded timeout: 1h0m0s. Will continue to retry."
    )


@pytest.mark.parametrize(("seconds", "text"), [
    (3600, "1h0m0s"), (5400, "1h30m0s"), (90, "1m30s"), (45, "45s"), (1.5, "1.5s"), (0, "0s"),
    (7200.25, "2h0m0.25s"),
])  # fmt: skip
def test_go_duration(seconds: float, text: str) -> None:
    assert go_duration(seconds) == text


def test_go_minutes() -> None:
    assert [go_minutes(s) for s in (600, 300, 60, 90, 15)] == ["10", "5", "1", "1.5", "0.25"]


TIMEOUTS = [
    ("90m", 5400.0), ("2h", 7200.0), ("1h30m", 5400.0), ("45s", 45.0), ("1d", 86400.0),
    (" 3h ", 10800.0), ("7d", 604800.0),
]  # fmt: skip
BAD_TIMEOUTS = [
    ("", "expected a duration such as 90m, 2h or 1h30m, got ''"),
    ("1 hour", "expected a duration such as 90m, 2h or 1h30m, got '1 hour'"),
    ("-1h", "expected a duration such as 90m, 2h or 1h30m, got '-1h'"),
    ("0s", "must be more than 0 and at most 7 days, got '0s'"),
    ("8d", "must be more than 0 and at most 7 days, got '8d'"),
    ("3600", "expected a duration such as 90m, 2h or 1h30m, got '3600'"),
]


@pytest.mark.parametrize(("text", "seconds"), TIMEOUTS)
def test_drain_timeout_values(text: str, seconds: float) -> None:
    assert parse_timeout(text) == seconds
    settings = drain_settings({DRAIN_TIMEOUT_ANNOTATION: text})
    assert (settings.timeout, settings.set, settings.error) == (seconds, True, "")


@pytest.mark.parametrize(("text", "why"), BAD_TIMEOUTS)
def test_a_bad_drain_timeout_names_the_annotation_and_keeps_the_default(
    text: str, why: str
) -> None:
    settings = drain_settings({DRAIN_TIMEOUT_ANNOTATION: text})
    assert settings.timeout == 3600.0 and settings.set
    assert settings.error == (
        f"annotation mcd-project.github.io/drain-timeout: {why}; the default 1h0m0s applies"
    )
    assert settings.describe() == settings.error


def test_no_drain_timeout_annotation() -> None:
    assert drain_settings({}) == drain_settings({"other": "x"})
    assert (drain_settings({}).timeout, drain_settings({}).set) == (3600.0, False)


BUDGET = [{"reason": "DisruptionBudget",
           "message": "The disruption budget web-pdb needs 1 healthy pods and has 1 currently"}]  # fmt: skip
REASONS = [
    (429, "Cannot evict pod as it would violate the pod's disruption budget.", BUDGET,
     "blocked by PodDisruptionBudget apps/web-pdb: The disruption budget web-pdb needs 1 "
     "healthy pods and has 1 currently"),
    (429, "Too many requests", [], "blocked: Too many requests"),
    (500, "This pod has more than one PodDisruptionBudget", [],
     "eviction failed: 500 InternalError: x"),
]  # fmt: skip


@pytest.mark.parametrize(("status", "message", "causes", "text"), REASONS)
def test_why_an_eviction_was_refused(
    status: int, message: str, causes: list[dict[str, str]], text: str
) -> None:
    assert blocked_reason(status, message, causes, "apps", "500 InternalError: x") == text


def test_what_a_blocked_drain_says() -> None:
    assert terminating([]) == "evicted, still terminating"
    assert terminating(["a/b", "c"]) == "evicted, still terminating (finalizers: a/b, c)"
    assert not_evicted("w", "1m30s", {"ns/b": "x", "ns/a": "y"}) == (
        "failed to drain node: w after 1m30s: 2 pod(s) not evicted: ns/a: y; ns/b: x"
    )
    assert blocked_condition({}) == (False, "AsExpected", "no drain is blocked")
    assert blocked_condition({"w-1": "ns/a: blocked", "w-0": "ns/b: blocked"}) == (
        True,
        "EvictionBlocked",
        "2 node(s) cannot be drained: node w-0: ns/b: blocked; node w-1: ns/a: blocked",
    )
