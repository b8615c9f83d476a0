"""The metrics of issue 33, as a scraper reads them: the agent's update and drain durations
(across the agent restart a reboot makes), ``mcd_reboot_required`` from the reboot owed on
disk, health-gate and try results; the controller's per-pool rollout series (upstream's
``mco_*`` counts, nodes left, target, paused with reason, progress, estimate, members)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from mcd.agent.report import timing
from mcd.agent.report.metrics import Metrics
from mcd.agent.safety.gauges import watch_node
from mcd.agent.safety.owed import OWED
from mcd.agent.safety.trymode import TRY_STATE
from mcd.controller.metrics import PoolRollout, RolloutMetrics, pool_rollout
from mcd.controller.service import ControllerMetrics
from mcd.controller.sync import PoolReport
from mcd.host.rootfs import Root
from mcd.model.planning.plan import make_plan
from mcd.model.pool.rollout import NO_CAPACITY, NODE_FAILING, PAUSED, Rollout
from mcd.model.vocabulary import Annotation
from tests.builders import file_entry, mc

Obj = dict[str, Any]


def samples(registry: CollectorRegistry) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample a scrape of ``registry`` shows, by name and sorted labels."""
    text = generate_latest(registry).decode()
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def value(registry: CollectorRegistry, name: str, **labels: str) -> float | None:
    return samples(registry).get((name, tuple(sorted(labels.items()))))


# -- the agent ------------------------------------------------------------------------------


def test_update_kinds_follow_the_plan() -> None:
    old = mc("a")
    reboot = make_plan(old, mc("b", files=[file_entry("/etc/foo", "x")]))
    os_change = make_plan(old, mc("c", osImageURL="quay.io/os@sha256:1"))
    assert timing.kind_of(reboot) == "reboot"
    assert timing.kind_of(os_change) == "os"
    assert timing.kind_of(replace(reboot, actions=(), drain=True)) == "drain"
    assert timing.kind_of(replace(reboot, actions=(), drain=False)) == "rebootless"


def test_a_reboot_update_is_timed_across_the_agent_restart(tmp_path: Path) -> None:
    root = Root(tmp_path)
    timing.started(root, "rendered-worker-2", "reboot", clock=lambda: 1000.0)
    timing.started(root, "rendered-worker-2", "reboot", clock=lambda: 1100.0)  # a retry
    assert (tmp_path / timing.TIMING.lstrip("/")).stat().st_mode & 0o777 == 0o600
    after = Metrics()  # the agent after the reboot
    assert timing.finished(root, after, "rendered-worker-2", clock=lambda: 1250.0) == 250.0
    reg = after.registry
    assert value(reg, "mcd_update_duration_seconds_count", kind="reboot") == 1
    assert value(reg, "mcd_update_duration_seconds_sum", kind="reboot") == 250
    assert value(reg, "mcd_update_duration_seconds_bucket", kind="reboot", le="300.0") == 1
    assert value(reg, "mcd_update_duration_seconds_bucket", kind="reboot", le="120.0") == 0
    assert value(reg, "mcd_update_last_duration_seconds", kind="reboot") == 250
    # Done again with nothing timed (a restart): no second observation
    assert timing.finished(root, after, "rendered-worker-2") is None
    assert value(reg, "mcd_update_duration_seconds_count", kind="reboot") == 1
    later = Metrics()  # any later start exports the last duration again
    watch_node(later, root, lambda: "boot-2")
    assert value(later.registry, "mcd_update_last_duration_seconds", kind="reboot") == 250
    assert value(later.registry, "mcd_update_duration_seconds_count", kind="reboot") == 0


def test_a_done_on_another_config_is_not_this_updates_end(tmp_path: Path) -> None:
    root = Root(tmp_path)
    metrics = Metrics()
    timing.started(root, "rendered-worker-2", "rebootless", clock=lambda: 10.0)
    assert timing.finished(root, metrics, "rendered-worker-1", clock=lambda: 20.0) is None
    timing.started(root, "rendered-worker-3", "drain", clock=lambda: 30.0)  # retargeted
    assert timing.finished(root, metrics, "rendered-worker-3", clock=lambda: 45.0) == 15.0
    assert value(metrics.registry, "mcd_update_duration_seconds_count", kind="drain") == 1
    assert value(metrics.registry, "mcd_update_duration_seconds_count", kind="rebootless") == 0


def test_an_unreadable_timing_file_never_fails_an_update(tmp_path: Path) -> None:
    root = Root(tmp_path)
    path = tmp_path / timing.TIMING.lstrip("/")
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    metrics = Metrics()
    timing.restore(root, metrics)
    assert timing.finished(root, metrics, "x") is None
    timing.started(root, "x", "os", clock=lambda: 1.0)
    assert timing.finished(root, metrics, "x", clock=lambda: 3.0) == 2.0


def test_reboot_required_is_the_reboot_owed_in_this_boot(tmp_path: Path) -> None:
    root = Root(tmp_path)
    metrics = Metrics()
    boot = ["boot-1"]
    watch_node(metrics, root, lambda: boot[0])
    assert value(metrics.registry, "mcd_reboot_required") == 0
    owed = tmp_path / OWED.lstrip("/")
    owed.parent.mkdir(parents=True, exist_ok=True)
    owed.write_text(json.dumps({"config": "rendered-worker-2", "bootID": "boot-1"}))
    assert value(metrics.registry, "mcd_reboot_required") == 1
    boot[0] = "boot-2"  # the reboot happened
    assert value(metrics.registry, "mcd_reboot_required") == 0
    assert value(metrics.registry, "mcd_try_pending") == 0
    (tmp_path / TRY_STATE.lstrip("/")).write_text(
        json.dumps({"config": "b", "previous": "a", "deadline": 1.0})
    )
    assert value(metrics.registry, "mcd_try_pending") == 1


def test_gate_verdicts_and_drains_are_counted() -> None:
    metrics = Metrics()
    metrics.gate_verdict(True)
    metrics.gate_verdict(False, "units")
    metrics.drain_duration.observe(42)
    reg = metrics.registry
    assert value(reg, "mcd_health_gate_runs_total", result="pass") == 1
    assert value(reg, "mcd_health_gate_runs_total", result="fail") == 1
    assert value(reg, "mcd_health_gate_failures_total", check="units") == 1
    assert value(reg, "mcd_health_gate_failed") == 1
    assert value(reg, "mcd_drain_duration_seconds_count") == 1
    assert value(reg, "mcd_try_results_total", result="reverted") == 0  # there from the start


# -- the controller -------------------------------------------------------------------------


def report(
    updated: int, total: int = 3, rollout: Rollout | None = None, degraded: int = 0
) -> PoolReport:
    status = {"machineCount": total, "updatedMachineCount": updated, "readyMachineCount": updated,
              "unavailableMachineCount": total - updated, "degradedMachineCount": degraded}  # fmt: skip
    return PoolReport("worker", rollout or Rollout(), status)


def node(name: str, state: str = "Done", drain: str = "", applied: str = "") -> Obj:
    annotations = {Annotation.STATE: state}
    if drain:
        annotations[Annotation.DESIRED_DRAIN] = drain
    if applied:
        annotations[Annotation.LAST_APPLIED_DRAIN] = applied
    return {"metadata": {"name": name, "annotations": annotations}}


def test_progress_is_a_new_target_a_node_updated_or_targeted() -> None:
    members = [node("a"), node("b", "Working", "drain-r2", "uncordon-r1"), node("c")]
    first = pool_rollout(report(0), "r2", members, {}, None, now=100.0)
    assert (first.progress_at, first.started_at, first.nodes_left) == (100.0, 100.0, 3)
    assert first.drains_in_flight == 1 and first.states["Working"] == 1
    same = pool_rollout(report(0), "r2", members, {}, first, now=200.0)
    assert same.progress_at == 100.0  # nothing moved
    targeted = pool_rollout(report(0, rollout=Rollout(targets=("a",))), "r2", members, {},
                            same, now=300.0)  # fmt: skip
    assert targeted.progress_at == 300.0
    one_done = pool_rollout(report(1), "r2", members, {"b": "pod p"}, targeted, now=400.0)
    assert (one_done.progress_at, one_done.updated_since_start) == (400.0, 1)
    assert one_done.drains_blocked == 1
    assert one_done.eta == 400.0 + 300.0 * 2  # 300 s a node since the target, 2 left
    new_target = pool_rollout(report(0), "r3", members, {}, one_done, now=500.0)
    assert (new_target.started_at, new_target.updated_since_start, new_target.eta) == (
        500.0, 0, None)  # fmt: skip


def test_paused_carries_why_no_node_gets_the_target() -> None:
    def paused(blocked: str) -> str:
        return pool_rollout(
            report(1, rollout=Rollout(blocked=blocked)), "r", [], {}, None, 0
        ).paused

    assert paused(PAUSED) == "paused"
    assert paused(NODE_FAILING) == "node-degraded"
    assert paused(NO_CAPACITY) == ""  # waiting for a slot is a rollout going on
    assert paused("") == ""


def test_the_scrape_shows_upstreams_counts_and_forgets_a_deleted_pool() -> None:
    metrics = ControllerMetrics()
    clock = [1000.0]
    rollout: RolloutMetrics = metrics.rollout
    rollout.clock = lambda: clock[0]
    pool = {"metadata": {"name": "worker"}, "spec": {
        "configuration": {"name": "rendered-worker-2"},
        "nodeSelector": {"matchLabels": {"node-role.kubernetes.io/worker": ""}}}}  # fmt: skip
    members = [{"metadata": {"name": n, "labels": {"node-role.kubernetes.io/worker": ""}}}
               for n in ("a", "b", "c")]  # fmt: skip
    rollout.observe([pool], members, [report(1, degraded=1, rollout=Rollout(blocked=PAUSED))], {})
    reg = metrics.registry
    assert value(reg, "mco_machine_count", pool="worker") == 3
    assert value(reg, "mco_updated_machine_count", pool="worker") == 1
    assert value(reg, "mco_degraded_machine_count", pool="worker") == 1
    assert value(reg, "mco_unavailable_machine_count", pool="worker") == 2
    assert value(reg, "mcd_pool_nodes_left", pool="worker") == 2
    assert value(reg, "mcd_pool_target_config", pool="worker", config="rendered-worker-2") == 1
    assert value(reg, "mcd_pool_paused", pool="worker", reason="paused") == 1
    assert value(reg, "mcd_pool_last_progress_timestamp_seconds", pool="worker") == 1000
    assert value(reg, "mcd_pool_node", pool="worker", node="b") == 1
    assert value(reg, "mcd_pool_nodes_by_state", pool="worker", state="Done") == 3
    rollout.observe([], [], [], {})
    assert not [k for k in samples(reg) if k[0].startswith(("mco_", "mcd_pool_"))]


def test_figures_are_frozen_between_passes() -> None:
    figures = PoolRollout("p", {"mco_updated_machine_count": 0})
    assert figures.eta is None


def test_a_failed_gate_before_the_reboot_is_reported_by_the_next_agent(tmp_path: Path) -> None:
    """A gate that fails after the boot into a new config rolls back and reboots: the agent
    of the next boot reads the verdict on disk."""
    verdict = tmp_path / "etc/machine-config-daemon/health-gate.json"
    verdict.parent.mkdir(parents=True)
    verdict.write_text(json.dumps({"config": "r2", "ok": False, "checks": []}))
    metrics = Metrics()
    watch_node(metrics, Root(tmp_path), lambda: "boot-2")
    assert value(metrics.registry, "mcd_health_gate_failed") == 1
    verdict.write_text(json.dumps({"config": "r3", "ok": True, "checks": []}))
    fresh = Metrics()
    watch_node(fresh, Root(tmp_path), lambda: "boot-3")
    assert value(fresh.registry, "mcd_health_gate_failed") == 0
