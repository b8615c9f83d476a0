"""``mcd status --cluster``: the screen from pools and Nodes as the controller leaves them (their
status computed by the controller's own ``calculate_status``): each pool's progress and
conditions, the alerts that would fire, and the next step; Prometheus' firing alerts instead
when it is asked."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from click.testing import CliRunner

from mcd.cli import cli
from mcd.cli.fleet.command import render
from mcd.cli.fleet.report import fleet_report
from mcd.cli.fleet.shapes import ALERTS
from mcd.model.drain.report import DRAIN_BLOCKED
from mcd.model.node.health import STATE_ANNOTATION
from mcd.model.pool.pools import NodeView
from mcd.model.pool.rollout import calculate_status, set_condition
from mcd.model.vocabulary import Annotation
from tests.monitoring import rules

Obj = dict[str, Any]
NOW = datetime(2026, 11, 26, 10, 0, tzinfo=UTC)
STAMP = "2026-11-26T10:00:00Z"
LABEL = "node-role.kubernetes.io/worker"


def node(name: str, current: str, desired: str, state: str = "Done", reason: str = "",
         **annotations: str) -> Obj:  # fmt: skip
    return {"metadata": {"name": name, "labels": {LABEL: ""}, "annotations": {
        Annotation.CURRENT_CONFIG: current, Annotation.DESIRED_CONFIG: desired,
        Annotation.STATE: state, Annotation.REASON: reason, **annotations}}}  # fmt: skip


def pool(nodes: list[Obj], target: str = "r2", when: str = STAMP, **spec: Any) -> Obj:
    p: Obj = {"metadata": {"name": "worker", "annotations": {}}, "spec": {
        "nodeSelector": {"matchLabels": {LABEL: ""}}, "configuration": {"name": target}, **spec},
        "status": {"configuration": {"name": "r1"}}}  # fmt: skip
    p["status"] = calculate_status(p, [NodeView.of(n) for n in nodes], when)
    return p


def names(report: Any) -> list[str]:
    return [a.name for a in report.alerts]


def test_every_shipped_alert_has_its_runbook_section() -> None:
    shipped = {r["alert"] for r in rules() if "alert" in r}
    assert set(ALERTS) == shipped
    assert all(anchor == name.lower() for name, anchor in ALERTS.items())


def test_all_pools_on_target_nothing_to_do() -> None:
    nodes = [node("a", "r2", "r2"), node("b", "r2", "r2")]
    report = fleet_report([pool(nodes)], nodes, NOW)
    assert (report.available, report.progressing, report.degraded) == (True, False, False)
    assert report.message == "All pools are on their target configs"
    assert report.alerts == ()
    assert report.next_step == "nothing to do: every pool is on its target config"
    (row,) = report.pools
    assert (row.machines, row.updated_count, row.left, row.updated) == (2, 2, 0, "True")
    text = render(report, NOW)
    assert "machine-config   True        False         False" in text
    assert "ALERTS: none would fire" in text


def test_a_node_degraded_on_the_target_halts_the_pool() -> None:
    reason = 'unexpected on-disk state validating against r2: content mismatch for file "/etc/x"'
    nodes = [node("a", "r1", "r2", "Degraded", reason), node("b", "r1", "r1")]
    report = fleet_report([pool(nodes)], nodes, NOW)
    assert names(report) == ["MCDPoolRolloutHalted"]
    assert report.alerts[0].subject == "pool=worker"
    assert report.pools[0].stopped == "node-degraded" and report.pools[0].left == 2
    assert report.next_step.startswith("mcd status --node a   (pool worker is halted")
    assert report.degraded and "degraded: worker" in report.message
    text = render(report, NOW)
    assert f"worker: node a: Degraded (desired r2): {reason}" in text
    assert "docs/runbook.md#mcdpoolrollouthalted" in text
    assert text.rstrip().endswith("docs/runbook.md#mcdpoolrollouthalted)")


def test_a_paused_pool_with_nodes_left() -> None:
    nodes = [node("a", "r1", "r1")]
    report = fleet_report([pool(nodes, paused=True)], nodes, NOW)
    assert names(report) == ["MCDPoolPaused"]
    assert report.next_step.startswith(
        'kubectl patch mcp worker --type merge -p \'{"spec":{"paused":false}}\''
    )


def test_a_long_rollout_may_be_stuck_and_says_whom_to_look_at() -> None:
    nodes = [node("a", "r1", "r2", "Working"), node("b", "r1", "r1")]
    old = (NOW - timedelta(minutes=45)).strftime("%Y-%m-%dT%H:%M:%SZ")
    report = fleet_report([pool(nodes, when=old)], nodes, NOW)
    (alert,) = report.alerts
    assert (alert.name, alert.source) == ("MCDRolloutNoProgress", "possible")
    assert alert.why == "Updating for 45m with 2 nodes left"
    assert report.next_step == "mcd status --node a   (pool worker: 2 of 2 nodes left)"
    recent = fleet_report([pool(nodes)], nodes, NOW)
    assert recent.alerts == () and recent.progressing
    assert recent.message == "Working towards the pools' targets: worker 2 of 2 nodes left"


def test_node_alerts_a_failed_reboot_and_a_failed_gate() -> None:
    gate = json.dumps({"config": "r2", "result": "failed", "check": "units", "time": STAMP})
    nodes = [
        node("a", "r1", "r1", "Degraded",
             "reboot command failed, something is seriously wrong: StartTransientUnit: x"),
        node("b", "r1", "r2", "Degraded", "health gate failed", **{STATE_ANNOTATION: gate}),
    ]  # fmt: skip
    report = fleet_report([pool(nodes, target="r1")], nodes, NOW)
    # a Degraded on the pool's target halts the pool too
    assert sorted(names(report)) == [
        "MCDHealthGateFailed",
        "MCDPoolRolloutHalted",
        "MCDRebootError",
    ]
    gate_alert = next(a for a in report.alerts if a.name == "MCDHealthGateFailed")
    assert gate_alert.why == "check units failed after the update to r2"
    assert report.next_step.startswith("mcd status --node a   (pool worker is halted")
    # rolled back to r1 (desired r1 again): the failure of r2 is over, not an alert
    moved_on = [node("b", "r1", "r1", **{STATE_ANNOTATION: gate})]
    assert "MCDHealthGateFailed" not in names(fleet_report([pool(moved_on, target="r1")],
                                                            moved_on, NOW))  # fmt: skip


def test_a_drain_blocked_past_its_timeout_is_mccdrainerror() -> None:
    nodes = [node("a", "r1", "r2", "Working")]
    p = pool(nodes)
    old = (NOW - timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
    set_condition(p["status"]["conditions"], DRAIN_BLOCKED, True, "EvictionBlocked",
                  "1 node(s) cannot be drained: node a: ns/pod: blocked by budget", old)  # fmt: skip
    report = fleet_report([p], nodes, NOW)
    assert "MCCDrainError" in names(report)
    assert report.next_step.startswith("kubectl describe mcp worker   (DrainBlocked")
    assert "worker: DrainBlocked: 1 node(s) cannot be drained" in render(report, NOW)


def test_prometheus_alerts_replace_the_worked_out_ones() -> None:
    nodes = [node("a", "r1", "r2", "Degraded", "x")]
    firing = [
        {"labels": {"alertname": "MCDRebootError", "node": "a", "severity": "critical"},
         "annotations": {"description": "Reboot failed on a"}, "state": "firing"},
        {"labels": {"alertname": "Watchdog"}, "annotations": {}, "state": "firing"},
    ]  # fmt: skip
    report = fleet_report([pool(nodes)], nodes, NOW, firing)
    assert [(a.name, a.subject, a.source) for a in report.alerts] == [
        ("MCDRebootError", "node=a", "prometheus")
    ]
    assert "ALERTS\n" in render(report, NOW)


def test_no_pools() -> None:
    report = fleet_report([], [], NOW)
    assert not report.available and report.message.startswith("no MachineConfigPools")


def test_an_unreachable_prometheus_is_one_line_naming_it(tmp_path: Any) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'http://127.0.0.1:9'}}]\n"
        "users: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
        "current-context: x\n"
    )
    result = CliRunner().invoke(cli, ["status", "--cluster", "--kubeconfig", str(kubeconfig)])
    assert result.exit_code == 1
    assert result.output.startswith("error: cannot read the pools and nodes: ")
    assert len(result.output.strip().splitlines()) == 1


def test_the_json_form_carries_the_same() -> None:
    nodes = [node("a", "r1", "r2", "Degraded", "x")]
    doc = json.loads(json.dumps(fleet_report([pool(nodes)], nodes, NOW).to_json()))
    assert doc["degraded"] is True and doc["pools"][0]["stopped"] == "node-degraded"
    (alert,) = doc["alerts"]
    assert alert["runbook"] == "docs/runbook.md#mcdpoolrollouthalted"
    assert doc["next_step"].startswith("mcd status --node a")


def test_prometheus_without_cluster_is_a_usage_error() -> None:
    result = CliRunner().invoke(cli, ["status", "--prometheus", "http://127.0.0.1:9"])
    assert result.exit_code == 64
    assert "--prometheus needs --cluster" in result.output


def test_a_pool_its_rollout_policy_halted_says_what_resumes_it() -> None:
    nodes = [node("a", "r2", "r2"), node("b", "r1", "r1")]
    p = pool(nodes)
    message = "Rollout of r2 halted: 1 unhealthy updated nodes (a: health gate failed (app))"
    set_condition(p["status"]["conditions"], "RolloutHalted", True, "UnhealthyNodes", message,
                  STAMP)  # fmt: skip
    report = fleet_report([p], nodes, NOW)
    assert names(report) == ["MCDPoolRolloutHalted"]
    assert report.pools[0].stopped == "rollout-halted"
    assert report.next_step.startswith(
        "kubectl describe mcp worker   (RolloutHalted names the nodes and why; when fixed: "
        "kubectl annotate mcp worker mcd-project.github.io/rollout-halted-;"
    )
    assert f"worker: RolloutHalted: {message}" in render(report, NOW)


def test_a_node_without_its_agent_is_not_done_whatever_its_annotations_say() -> None:
    from mcd.cli.fleet.agents import agent_of  # noqa: PLC0415

    nodes = [node("a", "r2", "r2"), node("b", "r2", "r2"), node("c", "r2", "r2")]
    crash = {"metadata": {"name": "mcd-x", "namespace": "mcd"}, "spec": {"nodeName": "a"},
             "status": {"phase": "Running", "containerStatuses": [{"name": "mcd", "state": {
                 "waiting": {"reason": "CrashLoopBackOff", "message": "back-off 5m0s"}}}]}}  # fmt: skip
    stale = (NOW - timedelta(minutes=20)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    leases = [
        {"metadata": {"name": "b", "namespace": "default"},
         "spec": {"holderIdentity": "host_0123abcd@m1", "leaseDurationSeconds": 600,
                  "renewTime": stale}},
        {"metadata": {"name": "c", "namespace": "kube-node-lease"},  # the kubelet's: not ours
         "spec": {"holderIdentity": "c", "leaseDurationSeconds": 40, "renewTime": STAMP}},
    ]  # fmt: skip
    agents = [agent_of(n["metadata"]["name"], [crash], leases, NOW) for n in nodes]
    assert [(a.running, a.reason) for a in agents] == [
        (False, "CrashLoopBackOff: back-off 5m0s"),
        (False, "no agent pod; Lease default/b not renewed for 20m"),
        (False, "no agent pod (app.kubernetes.io/name=mcd) and no agent Lease"),
    ]
    report = fleet_report([pool(nodes)], nodes, NOW, agents=agents)
    assert report.message.endswith("; agent not running on a, b, c")
    assert {a.subject for a in report.alerts} == {"node=a", "node=b", "node=c"}
    assert report.next_step.startswith("kubectl -n mcd describe pod mcd-x   (the agent on a")
    text = render(report, NOW)
    assert "ALERTS: none would fire" not in text
    assert "  worker: node a: agent not running: CrashLoopBackOff: back-off 5m0s" in text
    assert render(report, NOW, wide=True).splitlines()[4].split()[-1] == "0/3"
