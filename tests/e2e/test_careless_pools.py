"""Careless pools on a live API server (the fake, or the real kube-apiserver): each names
itself in a condition on its own pool while ``worker`` rolls a new config out to its nodes
in the same controller (issue 31).

* ``infra``: a ``nodeSelector`` operator the CRD accepts and no label selector knows;
* ``gpu`` and ``db``: both select one node, which stays on its config (``mcc_pool_alert``);
* ``late``: a maintenance window whose duration no clock holds;
* ``secure``: a MachineConfig turning FIPS on, which no running node could apply;
* ``big``: two MachineConfigs rendering into more than the API server can store.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcd.cluster.configs import MACHINECONFIGS
from mcd.cluster.node import annotations_of
from mcd.model.pool.windows import WINDOW_ANNOTATION
from mcd.model.vocabulary import Annotation
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
from tests.e2e.test_controller import _crds, play_agent  # noqa: F401 - the CRDs on a real server
from tests.fakes.kubecluster import TestCluster

BASE = worker("base")


def big(name: str, role: str) -> dict[str, Any]:
    files = [{"path": f"/etc/{name}", "contents": {"source": "data:," + "a" * 720_000}}]
    doc = {"spec": {"config": {"ignition": {"version": "3.4.0"}, "storage": {"files": files}}}}
    return machine_config(name, role, doc)


def alert(ctl: ControllerProc, node: str) -> str:
    _, text = ctl.get("/metrics")
    prefix = f'mcc_pool_alert{{node="{node}"}} '
    return next((line[len(prefix) :] for line in text.splitlines() if line.startswith(prefix)), "")


def test_each_careless_pool_names_itself_while_worker_rolls_out(
    kube_cluster: TestCluster, tmp_path: Path
) -> None:
    cluster = kube_cluster
    ns = cluster.namespace("ctl")
    cluster.create(MACHINECONFIGS, machine_config("00-worker", "worker", BASE))
    create_pool(cluster, pool("worker", ["worker"], "worker", max_unavailable=2))
    bad = pool("infra", ["worker", "infra"], "infra")
    bad["spec"]["nodeSelector"] = {
        "matchExpressions": [{"key": "node-role.kubernetes.io/infra", "operator": "Gt"}]
    }
    create_pool(cluster, bad)
    create_pool(cluster, pool("gpu", ["worker", "gpu"], "gpu"))
    create_pool(cluster, pool("db", ["worker", "db"], "db"))
    late = '{"start": "02:00", "duration": "99999999999999999999d"}'
    create_pool(
        cluster, pool("late", ["worker", "late"], "late", annotations={WINDOW_ANNOTATION: late})
    )
    create_pool(cluster, pool("secure", ["worker", "secure"], "secure"))
    create_pool(cluster, pool("big", ["worker", "big"], "big"))
    ctl = ControllerProc(cluster, tmp_path, "a", ns).start()
    try:
        wait(lambda: target(cluster, "worker") != "", 30, "worker rendered", ctl.log)
        wait(lambda: target(cluster, "secure") != "", 30, "secure rendered", ctl.log)
        first = target(cluster, "worker")
        workers = [cluster.node(f"worker-{i}") for i in range(2)]
        for name in workers:
            label_node(cluster, name, "worker")
            play_agent(cluster, name, first)
        both = cluster.node("both")
        label_node(cluster, both, "worker", "gpu", "db")
        play_agent(cluster, both, first)
        cluster.create(
            MACHINECONFIGS, machine_config("20-fips", "secure", {"spec": {"fips": True}})
        )
        cluster.create(MACHINECONFIGS, big("60-big-a", "big"))
        cluster.create(MACHINECONFIGS, big("61-big-b", "big"))
        app = worker("app", app="threads=8\n")
        cluster.create(MACHINECONFIGS, machine_config("50-worker-app", "worker", app))
        wait(lambda: target(cluster, "worker") != first, 30, "worker re-rendered", ctl.log)
        second = target(cluster, "worker")

        def desired(node: str) -> str:
            return str(annotations_of(cluster.get_node(node)).get(Annotation.DESIRED_CONFIG))

        wait(lambda: all(desired(n) == second for n in workers), 30, "worker rolled out", ctl.log)

        def says(pool_name: str, kind: str, text: str) -> bool:
            found = pool_condition(cluster, pool_name, kind)
            return found.get("status") == "True" and text in str(found.get("message"))

        checks = {
            ("infra", "InvalidNodeSelector"): '"Gt" is not a valid label selector operator',
            ("gpu", "NodeInTwoPools"): (
                f"node {both} belongs to 2 custom roles, cannot proceed with this Node "
                f"(pools db, gpu); it stays on {first}"
            ),
            ("db", "NodeInTwoPools"): f"node {both} belongs to 2 custom roles",
            ("secure", "RenderDegraded"): 'and base config "20-fips": detected change to FIPS',
            ("big", "RenderDegraded"): "largest MachineConfigs: 60-big-a (0.69 MiB), 61-big-b",
        }
        for (pool_name, kind), text in checks.items():
            wait(lambda p=pool_name, k=kind, t=text: says(p, k, t), 30,  # type: ignore[misc]
                 f"{pool_name}: {kind}", ctl.log)  # fmt: skip
        window = pool_condition(cluster, "late", "MaintenanceWindow")
        assert window.get("reason") == "InvalidWindow"
        assert "duration: expected a duration such as 90m, 4h or 1h30m" in window["message"]
        assert desired(both) == first, "the node in two pools stays on its config"
        wait(lambda: alert(ctl, both) == "1.0", 15, "mcc_pool_alert", ctl.log)
        assert alert(ctl, workers[0]) == "0.0"
        assert "Traceback" not in ctl.log()
    finally:
        ctl.stop()
