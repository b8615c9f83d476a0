"""The rollout policy's gates on a live API server (the fake, or the real kube-apiserver), with
the controller as a real subprocess (issue 44 item 3; kured's blockers). No agents run: the
test plays their annotations.

* blocking pods: a pod matching ``blockingPods`` on the first node in line passes that node
  over (``RolloutHeld`` ``BlockingPods`` names the node and the pod, an Event, ``mcd status
  --cluster`` and ``mcd plan --pool`` say so); the others update; once the pod is gone the
  node goes too, and the hold is released;
* alerts, against a real Prometheus (Debian's ``prometheus``): a rule that fires holds the
  pool (``AlertsFiring`` naming it; the always-firing ``Watchdog`` is ignored by the filter,
  kured's ``--alert-filter-regexp``), then resolves and the pool proceeds; a Prometheus that
  is stopped holds the next rollout (``PrometheusUnreachable``)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from mcd.cluster.configs import MACHINECONFIGS
from mcd.model.pool.canary import POLICY_ANNOTATION
from tests.e2e.configs import worker
from tests.e2e.controller_harness import (
    ControllerProc,
    create_pool,
    label_node,
    machine_config,
    pool,
    pool_condition,
    target,
    wait,
)
from tests.e2e.harness import free_port
from tests.e2e.test_controller import BASE, _crds, play_agent  # noqa: F401 - the CRD fixture
from tests.e2e.test_rollback import mcd
from tests.e2e.test_rollout_policy import desired, pool_events
from tests.fakes.kubecluster import TestCluster
from tests.monitoring import MISSING, prometheus_tool
from tests.real.prometheus import PrometheusServer

Obj = dict[str, Any]


def start(
    cluster: TestCluster, tmp_path: Path, policy: Obj, count: int, max_unavailable: int
) -> tuple[ControllerProc, list[str], str]:
    """``count`` nodes Done on the first config, the pool with ``policy``: the controller,
    the nodes (upstream order) and the first config."""
    ns = cluster.namespace("ctl")
    cluster.create(MACHINECONFIGS, machine_config("00-worker", "worker", BASE))
    annotations = {POLICY_ANNOTATION: json.dumps(policy)}
    create_pool(cluster, pool("worker", ["worker"], "worker", max_unavailable,
                              annotations=annotations))  # fmt: skip
    ctl = ControllerProc(cluster, tmp_path, "a", ns).start()
    wait(lambda: target(cluster, "worker") != "", 30, "rendered", ctl.log)
    first = target(cluster, "worker")
    names = [cluster.node(n) for n in ("a-node", "b-node", "c-node")[:count]]
    for name in names:
        label_node(cluster, name, "worker")
        play_agent(cluster, name, first)
    wait(lambda: pool_condition(cluster, "worker", "Updated").get("status") == "True", 30,
         "all on the first config", ctl.log)  # fmt: skip
    return ctl, names, first


def new_config(cluster: TestCluster, ctl: ControllerProc, before: str, name: str, app: str) -> str:
    """A MachineConfig that changes a file (a drain and a reboot): the pool's new target."""
    cluster.create(MACHINECONFIGS, machine_config(name, "worker", worker(name, app=app)))
    wait(lambda: target(cluster, "worker") != before, 30, "re-rendered", ctl.log)
    return target(cluster, "worker")


def held(cluster: TestCluster) -> Obj:
    return pool_condition(cluster, "worker", "RolloutHeld")


def test_a_node_with_a_blocking_pod_waits_and_the_next_goes(
    kube_cluster: TestCluster, tmp_path: Path
) -> None:
    cluster = kube_cluster
    policy = {"blockingPods": ["app=database", {"matchLabels": {"backup": "running"}}]}
    ctl, (first_node, *rest), first = start(cluster, tmp_path, policy, 3, 1)
    apps = cluster.namespace("apps")
    cluster.pod(apps, "db-0", first_node, {"app": "database"})
    cluster.pod(apps, "web-0", rest[0], {"app": "web"})  # matches nothing: no block
    try:
        second = new_config(cluster, ctl, first, "50-app", "threads=8\n")
        for node in rest:  # one slot: b, then c; a is passed over each time
            wait(lambda n=node: desired(cluster, n) == second, 30, f"{node} targeted", ctl.log)  # type: ignore[misc]
            assert desired(cluster, first_node) == first
            play_agent(cluster, node, second)
        wait(lambda: held(cluster).get("reason") == "BlockingPods", 30, "RolloutHeld", ctl.log)
        message = held(cluster)["message"]
        assert f"node {first_node}: pods {apps}/db-0" in message, message
        assert "web-0" not in message
        assert any(r == "BlockingPods" and f"{apps}/db-0" in m
                   for r, _t, m in pool_events(cluster))  # fmt: skip
        time.sleep(3)  # passes go by: the node stays on its config
        assert desired(cluster, first_node) == first

        shown = mcd(cluster, "status", "--cluster")
        assert shown.returncode == 0, shown.stderr
        assert f"RolloutHeld: blocking pods hold node {first_node}" in shown.stdout, shown.stdout
        planned = mcd(cluster, "plan", "--pool", "worker")
        assert planned.returncode == 0, planned.stderr
        assert "Gates: nodes with pods matching app=database; backup=running wait" in (
            planned.stdout), planned.stdout  # fmt: skip
        assert f"Held: BlockingPods: blocking pods hold node {first_node}" in planned.stdout

        cluster.kube.request("DELETE", f"/api/v1/namespaces/{apps}/pods/db-0",
                             {"gracePeriodSeconds": 0})  # fmt: skip  # the database moved away
        wait(lambda: desired(cluster, first_node) == second, 60, "the node targeted", ctl.log)
        play_agent(cluster, first_node, second)
        wait(lambda: held(cluster).get("status") == "False", 30, "the hold released", ctl.log)
        assert any(r == "RolloutHoldReleased" for r, _t, _m in pool_events(cluster))
    finally:
        assert ctl.stop() == 0, ctl.log()[-3000:]


class Exporter:
    """A metric the test sets (``mcd_test_backup_running``), served on 127.0.0.1 for
    Prometheus to scrape."""

    def __init__(self) -> None:
        self.value = 1
        exporter = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = f"mcd_test_backup_running {exporter.value}\n".encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)


RULES = {"groups": [{"name": "gates", "rules": [
    {"alert": "Watchdog", "expr": "vector(1)"},  # always firing, as in kube-prometheus
    {"alert": "DatabaseBackupRunning", "expr": "mcd_test_backup_running > 0"},
]}]}  # fmt: skip


@pytest.fixture
def exporter() -> Iterator[Exporter]:
    running = Exporter()
    yield running
    running.stop()


def test_firing_alerts_hold_the_pool_until_they_resolve(
    kube_cluster: TestCluster, tmp_path: Path, exporter: Exporter
) -> None:
    binary = prometheus_tool("prometheus")
    if binary is None:
        pytest.skip(MISSING)
    cluster = kube_cluster
    prom = PrometheusServer(binary, tmp_path / "prometheus", free_port())
    prom.start([{"job_name": "backup",
                 "static_configs": [{"targets": [f"127.0.0.1:{exporter.port}"]}]}], RULES)  # fmt: skip
    ctl: ControllerProc | None = None
    try:

        def names() -> set[str]:
            return {a["labels"]["alertname"] for a in prom.alerts()}

        wait(lambda: names() == {"Watchdog", "DatabaseBackupRunning"}, 60,
             "both alerts firing in Prometheus", prom.log)  # fmt: skip
        policy = {"alerts": {"prometheusURL": prom.url(""), "filter": "^Watchdog$"}}
        ctl, nodes, first = start(cluster, tmp_path, policy, 2, 2)
        second = new_config(cluster, ctl, first, "50-app", "threads=8\n")
        wait(lambda: held(cluster).get("reason") == "AlertsFiring", 30, "held", ctl.log)
        message = held(cluster)["message"]
        assert "1 active alert in Prometheus" in message and "DatabaseBackupRunning" in message
        assert "Watchdog" not in message  # the filter ignores it (kured's default semantics)
        assert any(r == "AlertsFiring" for r, _t, _m in pool_events(cluster))
        time.sleep(3)
        assert [desired(cluster, n) for n in nodes] == [first, first]
        shown = mcd(cluster, "status", "--cluster")
        row = next(line for line in shown.stdout.splitlines() if line.startswith("worker "))
        assert "held" in row.split(), shown.stdout
        planned = mcd(cluster, "plan", "--pool", "worker")
        assert "Held: AlertsFiring: 1 active alert" in planned.stdout, planned.stdout

        exporter.value = 0  # the backup is over: the alert resolves
        wait(lambda: names() == {"Watchdog"}, 60, "the alert resolved", prom.log)
        wait(lambda: all(desired(cluster, n) == second for n in nodes), 60, "both targeted",
             ctl.log)  # fmt: skip
        for node in nodes:
            play_agent(cluster, node, second)
        wait(lambda: held(cluster).get("status") == "False", 30, "released", ctl.log)
        assert any(r == "RolloutHoldReleased" for r, _t, _m in pool_events(cluster))

        prom.stop()  # no answer: the next rollout is held, saying so
        time.sleep(2)  # the last answer (kept 1 s) is over
        new_config(cluster, ctl, second, "60-app", "threads=16\n")
        wait(lambda: held(cluster).get("reason") == "PrometheusUnreachable", 60,
             "held: no answer", ctl.log)  # fmt: skip
        assert "did not answer the query ALERTS" in held(cluster)["message"]
        time.sleep(2)
        assert [desired(cluster, n) for n in nodes] == [second, second]
    finally:
        prom.stop()
        if ctl is not None:
            assert ctl.stop() == 0, ctl.log()[-3000:]
