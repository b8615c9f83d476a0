"""``mcd controller`` end to end: real ``mcd start`` agents on every node, the controller as a
real subprocess, the fake API server (issue 18).

* three pools (worker, infra, master), six agent nodes, ``maxUnavailable: 2``: a new
  MachineConfig renders into each pool that selects it and rolls out two nodes at a time,
  checked over every Node version the API server stored;
* a pause in the middle: no new ``desiredConfig``, the running update finishes;
* a second replica idles while the first holds the Lease, and takes over when it stops.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml

from mcd.cluster.api import ApiError
from mcd.cluster.configs import MACHINECONFIGS
from mcd.cluster.node import annotations_of
from mcd.host.osupdate.rpmostree import RETRY_ENV
from mcd.model.pool.render import GENERATED_BY
from mcd.model.pool.windows import WINDOW_ANNOTATION
from mcd.model.vocabulary import Annotation
from tests.e2e.configs import worker
from tests.e2e.conftest import NodeFactory
from tests.e2e.controller_harness import (
    ROLE,
    ControllerProc,
    NodeMonitor,
    Rebooter,
    boot_on_rendered,
    create_pool,
    get_pool,
    history_mark,
    label_node,
    machine_config,
    patch_pool,
    pool,
    pool_condition,
    replay_unavailable,
    target,
    wait,
)
from tests.e2e.harness import IMAGE_B, REPO, AgentNode
from tests.fakes import rpm_ostree
from tests.fakes.apiserver import FakeApiServer
from tests.fakes.kubecluster import TestCluster
from tests.fakes.realcluster import install_crd
from tests.patience import patient

CRDS = {
    "01-machineconfig-crd.yaml": "machineconfigs",
    "04-machineconfigpool-crd.yaml": "machineconfigpools",
}
MCN = "/apis/machineconfiguration.openshift.io/v1/machineconfignodes"


@pytest.fixture(autouse=True)
def _crds(kube_cluster: TestCluster) -> Iterator[None]:
    """On a real cluster: install the two CRDs (the fake serves them built in), and after the
    test remove the rendered configs the controller made (their pool is gone, and the
    garbage collector would remove them under the next test's feet)."""
    if kube_cluster.fake is not None:
        yield
        return
    for name, plural in CRDS.items():
        doc = yaml.safe_load((REPO / "daemonset" / "kubernetes" / name).read_text())
        install_crd(kube_cluster.kube, doc, f"/apis/machineconfiguration.openshift.io/v1/{plural}")
    yield
    for mc in kube_cluster.kube.request("GET", MACHINECONFIGS).get("items") or []:
        if mc["metadata"]["name"].startswith("rendered-"):
            with contextlib.suppress(ApiError):
                kube_cluster.kube.request("DELETE", f"{MACHINECONFIGS}/{mc['metadata']['name']}")


BASE = worker("base")  # app.conf threads=4, a pull secret, a unit, core's key, IMAGE_A


def rendered(cluster: TestCluster, pool_name: str, ctl: ControllerProc) -> str:
    wait(lambda: target(cluster, pool_name) != "", 30, f"pool {pool_name} rendered", ctl.log)
    return target(cluster, pool_name)


def start_pool_nodes(
    cluster: TestCluster,
    make_node: NodeFactory,
    role: str,
    count: int,
    config: str,
    *extra_roles: str,
) -> list[AgentNode]:
    nodes = [make_node(f"{role}-{i}", drain_mode="controller") for i in range(count)]
    for node in nodes:
        label_node(cluster, node.name, role, *extra_roles)
        boot_on_rendered(cluster, node, config)
    for node in nodes:
        node.wait_ready()
        node.wait_state("Done", config)
    return nodes


@pytest.mark.fake_too("the history of the fake's stored writes")
def test_three_pools_six_nodes_max_unavailable_two(
    make_node: NodeFactory, kube_cluster: TestCluster, tmp_path: object
) -> None:
    cluster = kube_cluster
    ns = cluster.namespace("ctl")
    cluster.create(MACHINECONFIGS, machine_config("00-worker", "worker", BASE))
    cluster.create(MACHINECONFIGS, machine_config("00-master", "master", BASE))
    create_pool(cluster, pool("worker", ["worker"], "worker", max_unavailable=2))
    create_pool(cluster, pool("infra", ["worker", "infra"], "infra", max_unavailable="50%"))
    create_pool(cluster, pool("master", ["master"], "master"))
    ctl = ControllerProc(cluster, tmp_path, "a", ns).start()  # type: ignore[arg-type]
    try:
        first = {p: rendered(cluster, p, ctl) for p in ("worker", "infra", "master")}
        assert first["worker"].startswith("rendered-worker-")
        assert first["infra"].startswith("rendered-infra-")
        workers = start_pool_nodes(cluster, make_node, "worker", 4, first["worker"])
        infra = start_pool_nodes(cluster, make_node, "infra", 2, first["infra"], "worker")
        wait(
            lambda: pool_condition(cluster, "worker", "Updated").get("status") == "True",
            30,
            "worker Updated",
            ctl.log,
        )

        # a new MachineConfig for the worker role: a file change that needs a reboot
        app = worker("app", app="threads=8\n")
        fake = cluster.fake
        mark = history_mark(fake) if fake is not None else None
        members = {n.name: "worker" for n in workers} | {n.name: "infra" for n in infra}
        # on a real cluster, a watch sees every change instead of the fake's stored history
        monitor = NodeMonitor(cluster, members) if fake is None else None
        if monitor is not None:
            monitor.__enter__()
        cluster.create(MACHINECONFIGS, machine_config("50-worker-app", "worker", app))
        with Rebooter(workers + infra) as rebooter:
            for name in ("worker", "infra"):
                wait(
                    lambda n=name: target(cluster, n) not in ("", first[n]),  # type: ignore[misc]
                    30,
                    f"{name} re-rendered",
                    ctl.log,
                )
            second = {p: target(cluster, p) for p in ("worker", "infra")}
            for name in ("worker", "infra"):
                wait(
                    lambda n=name: (
                        pool_condition(cluster, n, "Updated").get("status") == "True"  # type: ignore[misc]
                        and (get_pool(cluster, n)["status"]["configuration"]["name"] == second[n])
                    ),
                    180,
                    f"{name} updated",
                    ctl.log,
                )
            assert not rebooter.errors, rebooter.errors
    finally:
        assert ctl.stop() == 0, ctl.log()[-3000:]
        if monitor is not None:
            monitor.__exit__()

    assert target(cluster, "master") == first["master"], "master selects no new config"
    for node in workers + infra:
        a = node.annotations()
        want = second[members[node.name]]
        assert (a[Annotation.CURRENT_CONFIG], a[Annotation.STATE]) == (want, "Done")
        assert node.path("/etc/app/app.conf").read_text() == "threads=8\n"
        assert node.reboots_requested() == 1
    for node in workers + infra:  # upstream's UpdateInProgress taint: gone once targeted
        assert not (node.node().get("spec") or {}).get("taints")
    if fake is not None and mark is not None:
        peak = replay_unavailable(fake, members, mark)
        with fake.store.lock:
            tainted = {c.obj["metadata"]["name"] for c in fake.store.history
                       if c.resource == "nodes" and c.rv > mark[0]
                       and any(t.get("key") == "UpdateInProgress"
                               for t in (c.obj.get("spec") or {}).get("taints") or [])}  # fmt: skip
        # the first batch of each pool is targeted in the pass that sees the new config: it
        # never waits, so it never gets the taint; every node after it does
        assert len(set(members) - tainted) == 3 and tainted < set(members), tainted
    else:
        assert monitor is not None and monitor.events >= 6 * 3, "every node change was seen"
        peak = monitor.peak
    assert peak == {"worker": 2, "infra": 1}, peak
    status = get_pool(cluster, "worker")["status"]
    assert {k: status[k] for k in status if k.endswith("achineCount")} == {
        "machineCount": 4,
        "updatedMachineCount": 4,
        "readyMachineCount": 4,
        "unavailableMachineCount": 0,
        "degradedMachineCount": 0,
    }
    assert [s["name"] for s in get_pool(cluster, "infra")["spec"]["configuration"]["source"]] == [
        "00-worker",
        "50-worker-app",
    ]
    old = cluster.kube.request("GET", f"{MACHINECONFIGS}/{first['worker']}")
    assert old["metadata"]["name"] == first["worker"], "a rendered config is kept"


def test_pause_mid_rollout_lets_the_running_update_finish(
    make_node: NodeFactory, kube_cluster: TestCluster, tmp_path: object
) -> None:
    cluster = kube_cluster
    ns = cluster.namespace("ctl")
    cluster.create(MACHINECONFIGS, machine_config("00-worker", "worker", BASE))
    create_pool(cluster, pool("worker", ["worker"], "worker"))
    ctl = ControllerProc(cluster, tmp_path, "a", ns).start()  # type: ignore[arg-type]
    try:
        first = rendered(cluster, "worker", ctl)
        nodes = start_pool_nodes(cluster, make_node, "worker", 3, first)
        with Rebooter(nodes):
            app = worker("app", app="threads=8\n")
            cluster.create(MACHINECONFIGS, machine_config("50-worker-app", "worker", app))
            wait(lambda: target(cluster, "worker") != first, 30, "re-rendered", ctl.log)
            second = target(cluster, "worker")

            def targeted() -> list[AgentNode]:
                return [
                    n for n in nodes if n.annotations().get(Annotation.DESIRED_CONFIG) == second
                ]

            wait(lambda: len(targeted()) == 1, 30, "first node targeted", ctl.log)
            patch_pool(cluster, "worker", {"spec": {"paused": True}})
            (running,) = targeted()
            running.wait_state("Done", second, timeout=60)  # the update in progress finishes
            wait(
                lambda: (
                    "Pool is paused"
                    in pool_condition(cluster, "worker", "Updating").get("message", "")
                ),
                15,
                "paused condition",
                ctl.log,
            )
            time.sleep(3)  # three resyncs: nothing new may be targeted
            assert targeted() == [running]
            assert pool_condition(cluster, "worker", "Updating")["message"] == (
                f"Pool is paused; will not update to MachineConfig {second}"
            )
            patch_pool(cluster, "worker", {"spec": {"paused": False}})
            wait(
                lambda: pool_condition(cluster, "worker", "Updated").get("status") == "True",
                120,
                "updated after unpause",
                ctl.log,
            )
    finally:
        assert ctl.stop() == 0, ctl.log()[-3000:]
    assert all(n.annotations()[Annotation.CURRENT_CONFIG] == second for n in nodes)
    events = cluster.kube.request("GET", f"/api/v1/namespaces/{ns}/events")["items"]
    mine = [(e["reason"], e["message"]) for e in events
            if e["involvedObject"].get("kind") == "MachineConfigPool"
            and e["involvedObject"].get("name") == "worker"]  # fmt: skip
    assert ("Updating", f"Pool worker now targeting MachineConfig {second}") in mine
    assert ("Completed", f"Pool worker has completed update to MachineConfig {second}") in mine
    assert any(reason == "SetDesiredConfig" and message.endswith(f"to MachineConfig: {second}")
               for reason, message in mine)  # fmt: skip
    assert any(reason == "RenderedConfigGenerated" for reason, _ in mine)


@pytest.mark.fake_too("what each replica asked for, from the fake's request log")
def test_second_replica_waits_while_the_first_holds_the_lease(
    kube_cluster: TestCluster, tmp_path: object
) -> None:
    cluster = kube_cluster
    ns = cluster.namespace("ctl")
    cluster.create(MACHINECONFIGS, machine_config("00-worker", "worker", BASE))
    create_pool(cluster, pool("worker", ["worker"], "worker"))
    a = ControllerProc(cluster, tmp_path, "a", ns).start()  # type: ignore[arg-type]
    b: ControllerProc | None = None
    try:
        rendered(cluster, "worker", a)
        wait(lambda: a.metric("mcd_controller_leader") == 1, 15, "a leads", a.log)
        b = ControllerProc(cluster, tmp_path, "b", ns).start()  # type: ignore[arg-type]
        wait(lambda: b.get("/readyz")[0] == 200, 15, "b ready", b.log)
        fake = cluster.fake
        if fake is not None:
            fake.reset_log()
        time.sleep(4)
        assert a.proc is not None and b.proc is not None
        lease = f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/mcd-controller"
        if fake is not None:  # the fake's request log: what each replica asked for
            by_b = [(r.method, r.path) for r in fake.requests if f"_{b.proc.pid})" in r.user_agent]
            by_a = [r for r in fake.requests if f"_{a.proc.pid})" in r.user_agent]
            assert by_b and set(by_b) == {("GET", lease)}, "a standby only asks for the Lease"
            assert any(r.method == "PUT" and r.path == lease for r in by_a), "the leader renews"
        assert b.metric("mcd_controller_leader") == 0
        assert a.metric("mcd_controller_leader") == 1
        assert b.metric("mcd_controller_syncs_total") == 0, "a standby runs no pass"
        assert a.metric("mcd_controller_syncs_total") >= 1
        holder = cluster.kube.request("GET", lease)["spec"]["holderIdentity"]
        assert holder.endswith(f"_{a.proc.pid}")
        assert a.stop() == 0  # releases the Lease: b takes over at once
        wait(lambda: b.metric("mcd_controller_leader") == 1, 10, "b leads", b.log)
        patch_pool(cluster, "worker", {"spec": {"maxUnavailable": 2}})
        wait(
            lambda: (
                get_pool(cluster, "worker")["status"].get("observedGeneration")
                == get_pool(cluster, "worker")["metadata"]["generation"]
            ),
            10,
            "b syncs",
            b.log,
        )
    finally:
        a.stop()
        if b is not None:
            assert b.stop() == 0, b.log()[-3000:]


def test_a_degraded_node_stops_the_rollout_until_it_recovers(
    make_node: NodeFactory, kube_cluster: TestCluster, tmp_path: object
) -> None:
    """maxUnavailable 2 over three nodes: the first two go together; node 0 cannot pull the
    new OS image and goes Degraded. Upstream would still start node 2 (a failing node only
    takes one slot); mcd stops the rollout and says why, until node 0 recovers."""
    cluster = kube_cluster
    ns = cluster.namespace("ctl")
    cluster.create(MACHINECONFIGS, machine_config("00-worker", "worker", BASE))
    create_pool(cluster, pool("worker", ["worker"], "worker", max_unavailable=2))
    ctl = ControllerProc(cluster, tmp_path, "a", ns).start()  # type: ignore[arg-type]
    try:
        first = rendered(cluster, "worker", ctl)
        nodes = []
        for i in range(3):
            node = make_node(f"worker-{i}", drain_mode="controller")
            node.base_env[RETRY_ENV] = "0.01"
            label_node(cluster, node.name, "worker")
            boot_on_rendered(cluster, node, first)
            nodes.append(node)
        for node in nodes:
            node.wait_state("Done", first)
        broken = nodes[0]
        with rpm_ostree.edit(broken.rpm_state) as state:
            state["fail"]["rebase"] = (
                "error: pinging container registry quay.io: connection refused"
            )
            state["fail_times"]["rebase"] = 10_000
        with Rebooter(nodes):
            image = {"spec": {"osImageURL": IMAGE_B}}
            cluster.create(MACHINECONFIGS, machine_config("60-os", "worker", image))
            wait(lambda: target(cluster, "worker") != first, 30, "re-rendered", ctl.log)
            second = target(cluster, "worker")
            broken.wait_state("Degraded", timeout=60)
            nodes[1].wait_state("Done", second, timeout=60)
            wait(
                lambda: pool_condition(cluster, "worker", "NodeDegraded").get("status") == "True",
                15,
                "NodeDegraded",
                ctl.log,
            )
            time.sleep(3)  # three passes: node 2 must not be targeted
            assert nodes[2].annotations()[Annotation.DESIRED_CONFIG] == first
            degraded = pool_condition(cluster, "worker", "NodeDegraded")
            assert degraded["reason"] == "1 nodes are reporting degraded status on sync"
            assert degraded["message"].startswith(f"Node {broken.name} is reporting: ")
            assert "connection refused" in degraded["message"]
            assert pool_condition(cluster, "worker", "Degraded")["status"] == "True"
            updating = pool_condition(cluster, "worker", "Updating")["message"]
            assert updating.endswith(f"; stopped: {broken.name} failed to apply it")
            assert get_pool(cluster, "worker")["status"]["degradedMachineCount"] == 1

            # the registry is back: node 0 recovers, the rollout goes on
            with rpm_ostree.edit(broken.rpm_state) as state:
                state["fail"].pop("rebase")
            wait(
                lambda: pool_condition(cluster, "worker", "Updated").get("status") == "True",
                120,
                "updated after recovery",
                ctl.log,
            )
    finally:
        assert ctl.stop() == 0, ctl.log()[-3000:]
    assert all(n.annotations()[Annotation.CURRENT_CONFIG] == second for n in nodes)
    events = cluster.kube.request("GET", f"/api/v1/namespaces/{ns}/events")["items"]
    mine = [(e["reason"], e["message"]) for e in events
            if e["involvedObject"].get("kind") == "MachineConfigPool"
            and e["involvedObject"].get("name") == "worker"]  # fmt: skip
    assert ("Updating", f"Pool worker now targeting MachineConfig {second}") in mine
    assert ("Completed", f"Pool worker has completed update to MachineConfig {second}") in mine
    assert any(reason == "SetDesiredConfig" and message.endswith(f"to MachineConfig: {second}")
               for reason, message in mine)  # fmt: skip
    assert any(reason == "RenderedConfigGenerated" for reason, _ in mine)
    for node in nodes:
        (booted,) = [d for d in node.rpm()["deployments"] if d["booted"]]
        assert booted["container-image-reference"].endswith(IMAGE_B)
    assert pool_condition(cluster, "worker", "NodeDegraded")["status"] == "False"


def play_agent(cluster: TestCluster, node: str, config: str) -> None:
    """What an agent reports once an update is done (this test runs no agents)."""
    cluster.annotate(
        node,
        {
            Annotation.CURRENT_CONFIG: config,
            Annotation.DESIRED_CONFIG: config,
            Annotation.STATE: "Done",
        },
    )


def test_a_window_closing_with_nodes_left(kube_cluster: TestCluster, tmp_path: Path) -> None:
    """The window opened at the start of this minute and closes 12 s from now (more on a
    busy machine: the controller must start and render inside it). One node starts inside
    it; the window closes while it is still updating: it finishes, the two nodes left wait,
    and the pool and ``mcd plan --pool`` say when the window opens next (a week later: one day
    a week)."""
    now = datetime.now(UTC)
    opens = now.replace(second=0, microsecond=0)
    window = json.dumps(
        {
            "days": [opens.strftime("%a")],
            "start": opens.strftime("%H:%M"),
            "duration": f"{now.second + round(patient(12))}s",
            "timeZone": "UTC",
        }
    )
    cluster = kube_cluster
    ns = cluster.namespace("ctl")
    cluster.create(MACHINECONFIGS, machine_config("00-worker", "worker", BASE))
    create_pool(
        cluster, pool("worker", ["worker"], "worker", annotations={WINDOW_ANNOTATION: window})
    )
    ctl = ControllerProc(cluster, tmp_path, "a", ns).start()
    try:
        first = rendered(cluster, "worker", ctl)
        names = [cluster.node(f"worker-{i}") for i in range(3)]
        for name in names:
            label_node(cluster, name, "worker")
            play_agent(cluster, name, first)
        wait(
            lambda: (
                pool_condition(cluster, "worker", "MaintenanceWindow").get("reason") == "WindowOpen"
            ),
            15,
            "window open",
            ctl.log,
        )
        cluster.create(
            MACHINECONFIGS,
            machine_config("50-worker-app", "worker", worker("app", app="threads=8\n")),
        )
        wait(lambda: target(cluster, "worker") != first, 15, "re-rendered", ctl.log)
        second = target(cluster, "worker")

        def targeted() -> list[str]:
            return [
                n
                for n in names
                if annotations_of(cluster.get_node(n)).get(Annotation.DESIRED_CONFIG) == second
            ]

        wait(lambda: len(targeted()) == 1, 15, "one node targeted inside the window", ctl.log)
        (running,) = targeted()
        assert running == names[0], "upstream order: the oldest node first"
        wait(
            lambda: (
                pool_condition(cluster, "worker", "MaintenanceWindow").get("reason")
                == "WindowClosed"
            ),
            30,
            "window closed",
            ctl.log,
        )
        play_agent(cluster, running, second)  # the update in progress finishes after closing
        next_open = (opens + timedelta(days=7)).isoformat(timespec="minutes")
        closed = f"maintenance window closed; next opens at {next_open}"
        wait(
            lambda: (
                "wait for the maintenance window"
                in pool_condition(cluster, "worker", "Updating").get("message", "")
            ),
            15,
            "held nodes reported",
            ctl.log,
        )
        time.sleep(3)  # three passes: nothing else starts outside the window
        assert targeted() == [running]
        assert pool_condition(cluster, "worker", "MaintenanceWindow")["message"] == closed
        assert pool_condition(cluster, "worker", "Updating")["message"] == (
            f"All nodes are updating to MachineConfig {second}; 2 nodes wait for the "
            f"maintenance window ({closed})"
        )
        status = get_pool(cluster, "worker")["status"]
        assert (status["updatedMachineCount"], status["unavailableMachineCount"]) == (1, 0)

        plan = subprocess.run(
            [
                sys.executable,
                "-m",
                "mcd",
                "plan",
                "--pool",
                "worker",
                "--kubeconfig",
                str(cluster.kubeconfig),
            ],
            check=False,
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
        assert plan.returncode == 0, plan.stderr
        lines = plan.stdout.splitlines()
        assert lines[0] == "Pool worker: 3 nodes, maxUnavailable 1, paused: no"
        assert f"Target: {second} (exists)" in lines
        assert f"Maintenance window: {closed}" in lines
        rows = {
            line.split()[0]: line.split()
            for line in lines
            if line.split()[:1] and line.split()[0] in names
        }
        assert rows[names[0]][1:3] == [second, "none"]
        assert rows[names[1]][1:] == [first, "update", "reboot", "yes", "yes", "1"]
        assert rows[names[2]][1:] == [first, "update", "reboot", "yes", "yes", "2"]

        status = subprocess.run(
            [sys.executable, "-m", "mcd", "status", "--node", names[1],
             "--kubeconfig", str(cluster.kubeconfig)],
            check=False, capture_output=True, text=True, timeout=60,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )  # fmt: skip
        assert status.returncode == 0, status.stderr
        assert f"Pool:            worker (target {second}, paused no)" in status.stdout
        assert f"Window:          {closed}" in status.stdout
    finally:
        assert ctl.stop() == 0, ctl.log()[-3000:]


RBAC = REPO / "daemonset" / "kubernetes" / "05-controller-rbac.yaml"


@pytest.mark.fake_only("reads every request the controller made from the server's log")
def test_controller_rbac_is_exactly_what_it_uses(
    kube_cluster: TestCluster, fake_api: FakeApiServer, tmp_path: Path
) -> None:
    """Every request the controller makes while it renders, rolls out, drains and reports (Lease,
    informers, rendered config, pool spec and status, desiredConfig, cordon, pods and their
    evictions, the MachineConfigNode of a blocked drain, the MachineConfigNodes of a pool naming
    PinnedImageSets, MachineConfiguration: its overrides read, the object created and its status
    published, lastAppliedDrain, Events, the prune of an
    unused rendered config) is allowed by daemonset/kubernetes/05-controller-rbac.yaml, and every rule there
    is used."""
    cluster = kube_cluster
    ns = cluster.namespace("ctl")
    cluster.create(MACHINECONFIGS, machine_config("00-worker", "worker", BASE))
    # a PinnedImageSet labelled for the pool: the controller names it in the pool's spec
    # (upstream's pinned image set controller), then lists the MachineConfigNodes
    cluster.create("/apis/machineconfiguration.openshift.io/v1/pinnedimagesets", {
        "metadata": {"name": "pins", "labels": {ROLE: "worker"}},
        "spec": {"pinnedImages": [{"name": "quay.io/a@sha256:" + "a" * 64}]}})  # fmt: skip
    create_pool(cluster, pool("worker", ["worker"], "worker"))
    orphan = machine_config("rendered-worker-orphan", "worker", BASE)
    orphan["metadata"].update(annotations={GENERATED_BY: "test"}, labels={})
    cluster.create(MACHINECONFIGS, orphan)
    ctl = ControllerProc(cluster, tmp_path, "a", ns).start(
        "--prune-grace", "1s", "--prune-interval", "1"
    )
    try:
        first = rendered(cluster, "worker", ctl)
        wait(lambda: get_pool(cluster, "worker")["spec"].get("pinnedImageSets")
             == [{"name": "pins"}], 15, "pool names its labelled set", ctl.log)  # fmt: skip
        names = [cluster.node(f"worker-{i}") for i in range(2)]
        for name in names:
            label_node(cluster, name, "worker")
            play_agent(cluster, name, first)
        app = worker("app", app="threads=8\n")
        cluster.create(MACHINECONFIGS, machine_config("50-worker-app", "worker", app))
        wait(lambda: target(cluster, "worker") != first, 15, "re-rendered", ctl.log)
        second = target(cluster, "worker")
        for name in names:
            wait(
                lambda n=name: (
                    annotations_of(cluster.get_node(n)).get(  # type: ignore[misc]
                        Annotation.DESIRED_CONFIG
                    )
                    == second
                ),
                15,
                "targeted",
                ctl.log,
            )
            play_agent(cluster, name, second)
        wait(
            lambda: pool_condition(cluster, "worker", "Updated").get("status") == "True",
            15,
            "updated",
            ctl.log,
        )
        # the drain controller: an agent asks for a drain (a pod a budget holds: the node's
        # MachineConfigNode says so), the budget is loosened, then the agent asks an uncordon
        apps = cluster.namespace("apps")
        cluster.create(MCN, {"apiVersion": "machineconfiguration.openshift.io/v1",
                             "kind": "MachineConfigNode", "metadata": {"name": names[0]},
                             "spec": {"node": {"name": names[0]}, "pool": {"name": "worker"},
                                      "configVersion": {"desired": second}}})  # fmt: skip
        cluster.pod(apps, "web-0", names[0], {"app": "web"})
        cluster.pdb(apps, "web-pdb", {"app": "web"}, 1)
        wait(lambda: cluster.budget_in_force(apps, "web-pdb"), 30, "budget in force")
        cluster.annotate(names[0], {Annotation.DESIRED_DRAIN: f"drain-{second}"})

        def drained_condition() -> dict[str, object]:
            mcn = cluster.kube.request("GET", f"{MCN}/{names[0]}")
            found = [c for c in (mcn.get("status") or {}).get("conditions") or []
                     if c["type"] == "Drained"]  # fmt: skip
            return found[0] if found else {}

        wait(lambda: drained_condition().get("status") == "Unknown", 30, "MCN Drained", ctl.log)
        assert "blocked by PodDisruptionBudget" in str(drained_condition()["message"])
        cluster.set_min_available(apps, "web-pdb", 0)
        for request in (f"drain-{second}", f"uncordon-{second}"):
            cluster.annotate(names[0], {Annotation.DESIRED_DRAIN: request})
            wait(
                lambda r=request: (  # type: ignore[misc]
                    annotations_of(cluster.get_node(names[0])).get(Annotation.LAST_APPLIED_DRAIN)
                    == r
                ),
                30,
                f"{request} answered",
                ctl.log,
            )
        assert cluster.pods_on(names[0]) == []
        wait(lambda: all(m["metadata"]["name"] != "rendered-worker-orphan"
                         for m in cluster.kube.request("GET", MACHINECONFIGS)["items"]),
             30, "orphan pruned", ctl.log)  # fmt: skip
        generated_configs(cluster, ctl)
    finally:
        assert ctl.stop() == 0, ctl.log()[-3000:]
    docs = [d for d in yaml.safe_load_all(RBAC.read_text()) if d]
    granted = {
        (g, r, v)
        for d in docs
        if d["kind"] in ("ClusterRole", "Role") and d["metadata"]["name"] in CONTROLLER_ROLES
        for rule in d["rules"]
        for g in rule["apiGroups"]
        for r in rule["resources"]
        for v in rule["verbs"]
    }
    used = {
        permission(r.path, r.verb)
        for r in fake_api.requests
        if r.user_agent.startswith("machine-config-controller")
        and r.path.startswith(("/api/", "/apis/"))
    }
    assert used - granted == set(), "the controller made requests its roles do not allow"
    unused = granted - used - SCRAPER_REVIEWS
    assert unused == set(), "the roles allow requests the controller never makes"


def generated_configs(cluster: TestCluster, ctl: ControllerProc) -> None:
    """A KubeletConfig and a ContainerRuntimeConfig: their MachineConfigs created, one
    replaced when its object changes, both deleted with their objects (finalizers, status)."""
    group = "/apis/machineconfiguration.openshift.io/v1"
    label = "pools.operator.machineconfiguration.openshift.io/worker"
    patch_pool(cluster, "worker", {"metadata": {"labels": {label: ""}}})
    made = []
    selector = {"matchLabels": {label: ""}}
    specs: list[tuple[str, str, dict[str, object]]] = [
        ("kubeletconfigs", "KubeletConfig", {"kubeletConfig": {"maxPods": 42}}),
        ("containerruntimeconfigs", "ContainerRuntimeConfig",
         {"containerRuntimeConfig": {"logLevel": "debug"}}),
    ]  # fmt: skip
    for plural, kind, spec in specs:
        cluster.create(f"{group}/{plural}", {"metadata": {"name": "gen"}, "kind": kind,
                                             "spec": {**spec, "machineConfigPoolSelector":
                                                      selector}})  # fmt: skip
        made.append(f"{group}/{plural}/gen")
    mc = f"{MACHINECONFIGS}/99-worker-generated-kubelet"

    def generated() -> list[str]:
        return sorted(m["metadata"]["name"] for m in cluster.kube.request("GET", MACHINECONFIGS)
                      ["items"] if "-generated-" in m["metadata"]["name"])  # fmt: skip

    both = ["99-worker-generated-containerruntime", "99-worker-generated-kubelet"]
    wait(lambda: generated() == both, 30, "generated configs", ctl.log)
    version = cluster.kube.request("GET", mc)["metadata"]["resourceVersion"]
    cluster.kube.request("PATCH", made[0], body={"spec": {"kubeletConfig": {"maxPods": 50}}},
                         content_type="application/merge-patch+json")  # fmt: skip
    wait(lambda: cluster.kube.request("GET", mc)["metadata"]["resourceVersion"] != version,
         30, "generated config replaced", ctl.log)  # fmt: skip
    for path in made:
        cluster.kube.request("DELETE", path)
    wait(lambda: generated() == [], 30, "generated configs deleted", ctl.log)


CONTROLLER_ROLES = {"mcd-controller"}  # mcd-metrics-reader is for the scrapers, not the controller
SCRAPER_REVIEWS = {
    ("authentication.k8s.io", "tokenreviews", "create"),
    ("authorization.k8s.io", "subjectaccessreviews", "create"),
}
"""Made only when /metrics is scraped off loopback (the fake has no tokens to review):
tests/e2e/test_metrics_auth.py proves them on a real kube-apiserver."""


def stamp(value: str) -> datetime:
    """A Lease's MicroTime."""
    return datetime.strptime(value, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)


def permission(path: str, verb: str) -> tuple[str, str, str]:
    parts = [p for p in path.split("/") if p]
    group, rest = ("", parts[2:]) if parts[0] == "api" else (parts[1], parts[3:])
    if rest[:1] == ["namespaces"] and len(rest) > 2:
        rest = rest[2:]
    return group, rest[0] + (f"/{rest[2]}" if len(rest) > 2 else ""), verb


def test_a_killed_leader_is_replaced_once_its_lease_expires(
    kube_cluster: TestCluster, tmp_path: Path
) -> None:
    """SIGKILL: no release. The standby takes the Lease once it is older than its duration
    (3 s here) and carries on: a new MachineConfig still renders."""
    cluster = kube_cluster
    ns = cluster.namespace("ctl")
    cluster.create(MACHINECONFIGS, machine_config("00-worker", "worker", BASE))
    create_pool(cluster, pool("worker", ["worker"], "worker"))
    a = ControllerProc(cluster, tmp_path, "a", ns).start()
    b = ControllerProc(cluster, tmp_path, "b", ns)
    try:
        first = rendered(cluster, "worker", a)
        wait(lambda: a.metric("mcd_controller_leader") == 1, 15, "a leads", a.log)
        b.start()
        wait(lambda: b.get("/readyz")[0] == 200, 15, "b ready", b.log)
        a.stop(signal.SIGKILL)
        lease = f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/mcd-controller"
        last = cluster.kube.request("GET", lease)["spec"]  # a's last renewal: a is gone
        wait(lambda: b.metric("mcd_controller_leader") == 1, 15, "b leads", b.log)
        taken = cluster.kube.request("GET", lease)["spec"]
        assert taken["holderIdentity"] not in ("", last["holderIdentity"])
        # measured on the Lease's own stamps, not from the kill: load cannot fail it
        expired = stamp(last["renewTime"]) + timedelta(seconds=int(last["leaseDurationSeconds"]))
        assert stamp(taken["acquireTime"]) >= expired, "the Lease was taken before it expired"
        app = worker("app", app="threads=8\n")
        cluster.create(MACHINECONFIGS, machine_config("50-worker-app", "worker", app))
        wait(lambda: target(cluster, "worker") not in ("", first), 15, "b renders", b.log)
    finally:
        a.stop()
        assert b.stop() == 0, b.log()[-3000:]
