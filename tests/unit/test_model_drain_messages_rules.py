"""What a drain says (model/drain: report, cadence, pods): a refused eviction naming its
budget, Go's durations, a drain started or timed out, kubectl's warning lines."""

from __future__ import annotations

from typing import Any

import pytest

from mcd.model.drain.cadence import AttemptStart, Cadence, attempt_start, go_duration
from mcd.model.drain.pods import choose, pod_ref
from mcd.model.drain.report import blocked_reason

PDB = "The disruption budget web-pdb needs 1 healthy pods and has 1 currently"


@pytest.mark.parametrize(
    ("causes", "said"),
    [
        ([{"reason": "Other"}, {"reason": "DisruptionBudget", "message": PDB}],
         f"blocked by PodDisruptionBudget app/web-pdb: {PDB}"),
        ([{"reason": "DisruptionBudget", "message": "budget says no"}],
         "blocked by budget says no"),
        ([{"reason": "DisruptionBudget"}], "blocked by "),
        ([], "blocked: Cannot evict pod"),
    ],
)  # fmt: skip
def test_a_refused_eviction_names_its_budget(causes: list[dict[str, Any]], said: str) -> None:
    assert blocked_reason(429, "Cannot evict pod", causes, "app", "boom") == said
    assert blocked_reason(500, "x", causes, "app", "boom") == "eviction failed: boom"


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (1, "1s"), (1.5, "1.5s"), (59, "59s"), (60, "1m0s"), (90, "1m30s"),
     (3600, "1h0m0s"), (3661.5, "1h1m1.5s")],
)  # fmt: skip
def test_durations_as_go_prints_them(seconds: float, text: str) -> None:
    assert go_duration(seconds) == text


def test_a_drain_begins_runs_and_times_out() -> None:
    cadence = Cadence(timeout=3600.0)
    assert attempt_start(cadence, "w1", None, 100.0) == AttemptStart(0.0, False, "")
    assert attempt_start(cadence, "w1", 100.0, 50.0) == AttemptStart(0.0, False, "")
    assert attempt_start(cadence, "w1", 100.0, 3700.0) == AttemptStart(3600.0, False, "")
    assert attempt_start(cadence, "w1", 100.0, 3701.0) == AttemptStart(
        3601.0, True, "node w1: drain exceeded timeout: 1h0m0s. Will continue to retry."
    )


def pod(name: str, ns: str | None = "app", **meta: Any) -> dict[str, Any]:
    m: dict[str, Any] = {"name": name, **meta}
    if ns is not None:
        m["namespace"] = ns
    return {"metadata": m, "spec": {}, "status": {"phase": "Running"}}


def test_pods_are_named_namespace_slash_name_even_half_known() -> None:
    assert pod_ref(pod("web")) == "app/web"
    assert pod_ref(pod("web", ns=None)) == "/web"
    assert pod_ref({"metadata": {}}) == "/"


def test_kubectls_warnings_list_the_pods_each_concerns() -> None:
    mirror = pod("etcd", annotations={"kubernetes.io/config.mirror": "x"})
    bare1, bare2 = pod("a"), pod("b")
    got = choose([mirror, bare1, bare2])
    assert [c.ref for c in got.choices] == ["app/etcd", "app/a", "app/b"]
    assert got.evict == (bare1, bare2)
    assert "deleting Pods that declare no controller: app/a, app/b" in got.warnings()
