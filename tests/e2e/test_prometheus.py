"""A real Prometheus (Debian package ``prometheus``) on 127.0.0.1 scrapes the agents and the
controller of the fake-cluster e2e and evaluates the shipped alerting rules (issue 33).

Two pools, one node each, a new MachineConfig that needs a reboot: on ``worker-0`` systemd
refuses the reboot, so ``MCDRebootError`` fires (and the node, Degraded on the target, halts
its pool: ``MCDPoolRolloutHalted``, not ``MCDRolloutNoProgress``); on ``infra-0`` the reboot is
accepted and never happens, so the infra pool's rollout makes no progress
(``MCDRolloutNoProgress``) and the node waits for its reboot (``MCDRebootPending``). The alerts
are read from Prometheus' ``/api/v1/alerts``.

The rules are a test copy of ``daemonset/kubernetes/monitoring/20-prometheusrule.yaml`` with short waits,
the only change: every ``for:`` is 2 s instead of minutes or an hour, and the no-progress
threshold is 5 s instead of 1800 (the test would otherwise take 30 minutes). Every query of the
dashboard is run against the same server."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from mcd.cluster.configs import MACHINECONFIGS
from tests.e2e.configs import worker
from tests.e2e.conftest import NodeFactory
from tests.e2e.controller_harness import (
    ControllerProc,
    create_pool,
    machine_config,
    pool,
    target,
    wait,
)
from tests.e2e.harness import REPO, AgentNode, free_port
from tests.e2e.test_controller import (
    BASE,
    _crds,  # noqa: F401  # the CRDs on a real cluster
    rendered,
    start_pool_nodes,
)
from tests.fakes.kubecluster import TestCluster
from tests.monitoring import MISSING, prometheus_tool, rule_groups
from tests.real.prometheus import PrometheusServer
from tests.unit.test_monitoring_dashboard import queries

Obj = dict[str, Any]
NO_PROGRESS = "(time() - mcd_pool_last_progress_timestamp_seconds) > 1800"


def short_rules() -> Obj:
    """The shipped rules with short waits (see the module docstring)."""
    groups = copy.deepcopy(rule_groups())
    for group in groups["groups"]:
        for rule in group["rules"]:
            if "for" in rule:
                rule["for"] = "2s"
            if NO_PROGRESS in rule["expr"]:
                rule["expr"] = rule["expr"].replace("> 1800", "> 5")
    assert any("> 5" in r["expr"] for g in groups["groups"] for r in g["rules"])
    return groups


def firing(prom: PrometheusServer, name: str, **labels: str) -> list[Obj]:
    return [a for a in prom.alerts() if a["labels"]["alertname"] == name
            and all(a["labels"].get(k) == v for k, v in labels.items())]  # fmt: skip


def test_a_failed_reboot_and_a_stuck_rollout_fire_their_alerts(
    make_node: NodeFactory, kube_cluster: TestCluster, tmp_path: Path
) -> None:
    binary = prometheus_tool("prometheus")
    if binary is None:
        pytest.skip(MISSING)
    cluster = kube_cluster
    ns = cluster.namespace("prom")
    cluster.create(MACHINECONFIGS, machine_config("00-worker", "worker", BASE))
    create_pool(cluster, pool("worker", ["worker"], "worker"))
    create_pool(cluster, pool("infra", ["worker", "infra"], "infra"))
    ctl = ControllerProc(cluster, tmp_path, "a", ns).start()
    prom = PrometheusServer(binary, tmp_path / "prometheus", free_port())
    try:
        first = {p: rendered(cluster, p, ctl) for p in ("worker", "infra")}

        def one(role: str, *extra: str) -> AgentNode:
            (node,) = start_pool_nodes(
                cluster, _fake_systemd(make_node), role, 1, first[role], *extra
            )
            return node

        failing, ignoring = one("worker"), one("infra", "worker")
        agents = [{"targets": [f"127.0.0.1:{n.metrics_port}"], "labels": {"node": n.name}}
                  for n in (failing, ignoring)]  # fmt: skip
        prom.start([
            {"job_name": "mcd-controller", "static_configs": [{"targets": [f"127.0.0.1:{ctl.port}"]}]},
            {"job_name": "mcd", "static_configs": agents},
        ], short_rules())  # fmt: skip
        wait(lambda: len(prom.targets_up()) == 3 and all(prom.targets_up().values()), 30,
             "Prometheus scraping the controller and both agents", prom.log)  # fmt: skip
        time.sleep(3)  # a few evaluations with every pool Updated: nothing fires
        assert not [a for a in prom.alerts() if a["labels"]["alertname"].startswith("MCD")], (
            prom.alerts()
        )

        failing.bus.fail_method("StartTransientUnit")  # systemd refuses the reboot
        # the machine behind `ignoring` accepts the reboot and never reboots (no rebooter here)
        cluster.create(
            MACHINECONFIGS, machine_config("50-app", "worker", worker("app", app="threads=8\n"))
        )
        wait(lambda: target(cluster, "infra") != first["infra"], 30, "a new target", ctl.log)

        wait(lambda: bool(firing(prom, "MCDRebootError", node=failing.name)), 60,
             "MCDRebootError for the node whose reboot failed", failing.log, prom.log)  # fmt: skip
        wait(lambda: bool(firing(prom, "MCDRolloutNoProgress", pool="infra")), 60,
             "MCDRolloutNoProgress for the stuck infra pool", ctl.log, prom.log)  # fmt: skip
        wait(lambda: bool(firing(prom, "MCDRebootPending", node=ignoring.name)), 30,
             "MCDRebootPending for the node that never rebooted", ignoring.log)  # fmt: skip
        wait(lambda: bool(firing(prom, "MCDPoolRolloutHalted", pool="worker")), 30,
             "MCDPoolRolloutHalted: the failing node halts its pool", ctl.log)  # fmt: skip
        (reboot,) = firing(prom, "MCDRebootError", node=failing.name)
        assert reboot["labels"]["severity"] == "critical"
        assert reboot["annotations"]["runbook_url"].endswith("docs/runbook.md#mcdrebooterror")
        assert float(reboot["value"]) >= 1
        (stuck,) = firing(prom, "MCDRolloutNoProgress", pool="infra")
        assert float(stuck["value"]) == 1  # one node left
        # a halted pool is not also "no progress", and the node that rebooted nowhere is
        # not a failed reboot
        assert not firing(prom, "MCDRolloutNoProgress", pool="worker")
        assert not firing(prom, "MCDRebootError", node=ignoring.name)
        assert failing.state() == "Degraded" and ignoring.state() == "Working"

        # `mcd status --cluster`: the same picture, from Prometheus and from the objects alone
        seen = status_cluster(cluster, "--prometheus", prom.url(""))
        print(seen)
        assert "machine-config   True        True          True" in seen
        assert f"MCDRebootError         node={failing.name}" in seen
        assert "MCDRolloutNoProgress   pool=infra" in seen
        own = status_cluster(cluster)
        print(own)
        assert "ALERTS (worked out from the cluster's objects" in own
        assert "MCDPoolRolloutHalted   pool=worker" in own
        assert f"MCDRebootError         node={failing.name}" in own
        assert own.splitlines()[-1].startswith(f"Next: mcd status --node {failing.name}")

        # every dashboard query parses and evaluates on the same server
        answered = {}
        for query in queries():
            result = prom.api("/api/v1/query", query=query)
            assert result["status"] == "success", (query, result)
            answered[query] = result["data"]["result"]
        assert any(answered[q] for q in queries() if "mcd_pool_nodes_left" in q)
        assert any(answered[q] for q in queries() if "mcd_reboot_required" in q)
    finally:
        prom.stop()
        ctl.stop()


def status_cluster(cluster: TestCluster, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "mcd", "status", "--cluster", "--kubeconfig",
         str(cluster.kubeconfig), *args],
        capture_output=True, text=True, timeout=60, check=False,
        env={**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def _fake_systemd(make_node: NodeFactory) -> NodeFactory:
    """The D-Bus test service for systemd: its reboot can be refused, or accepted and ignored."""

    def make(base: str = "node", **kwargs: Any) -> AgentNode:
        return make_node(base, fake_systemd=True, **kwargs)

    return make
