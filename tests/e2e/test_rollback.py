"""History, rollback and prune on a live API server (the fake, or the real kube-apiserver),
through the ``mcd`` command line beside a running controller (issue 30). No agents run: the
test plays their annotations, one node at a time as the controller targets them."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from mcd.cluster.configs import MACHINECONFIGS
from mcd.cluster.node import annotations_of
from mcd.model.pool.history import HISTORY_ANNOTATION, ROLLBACK_ANNOTATION, parse_history
from mcd.model.pool.render import GENERATED_BY
from mcd.model.vocabulary import Annotation
from tests.e2e.configs import worker
from tests.e2e.conftest import NodeFactory
from tests.e2e.controller_harness import (
    ControllerProc,
    create_pool,
    get_pool,
    label_node,
    machine_config,
    pool,
    pool_condition,
    target,
    wait,
)
from tests.e2e.harness import REPO
from tests.e2e.test_controller import (  # noqa: F401 - the CRD fixture
    BASE,
    _crds,
    play_agent,
    start_pool_nodes,
)
from tests.fakes.kubecluster import TestCluster


def mcd(cluster: TestCluster, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "USER": "alice"}
    return subprocess.run(
        [sys.executable, "-m", "mcd", *args, "--kubeconfig", str(cluster.kubeconfig)],
        capture_output=True, text=True, env=env, timeout=60, check=False,
    )  # fmt: skip


def roll(cluster: TestCluster, names: list[str], config: str, ctl: ControllerProc) -> int:
    """Play each node the controller targets at ``config`` until all are on it; the most
    nodes ever updating at once."""
    most, deadline = 0, time.monotonic() + 60
    while time.monotonic() < deadline:
        notes = {n: annotations_of(cluster.get_node(n)) for n in names}
        moving = [n for n, a in notes.items() if a.get(Annotation.DESIRED_CONFIG) == config
                  and a.get(Annotation.CURRENT_CONFIG) != config]  # fmt: skip
        most = max(most, len(moving))
        if all(a.get(Annotation.CURRENT_CONFIG) == config for a in notes.values()):
            return most
        for n in moving:
            play_agent(cluster, n, config)
        time.sleep(0.3)
    raise AssertionError(f"not all nodes reached {config}\n{ctl.log()[-3000:]}")


def test_history_rollback_and_prune(kube_cluster: TestCluster, tmp_path: Path) -> None:
    cluster = kube_cluster
    ns = cluster.namespace("ctl")
    cluster.create(MACHINECONFIGS, machine_config("00-worker", "worker", BASE))
    create_pool(cluster, pool("worker", ["worker"], "worker", 1))
    ctl = ControllerProc(cluster, tmp_path, "a", ns).start()
    try:
        wait(lambda: target(cluster, "worker") != "", 30, "rendered", ctl.log)
        first = target(cluster, "worker")
        names = [cluster.node(f"w{i}") for i in range(3)]
        for name in names:
            label_node(cluster, name, "worker")
            play_agent(cluster, name, first)
        app = machine_config("50-app", "worker", worker("app", app="threads=8\n"))
        cluster.create(MACHINECONFIGS, app)
        wait(lambda: target(cluster, "worker") != first, 30, "re-rendered", ctl.log)
        second = target(cluster, "worker")
        assert roll(cluster, names, second, ctl) == 1

        shown = mcd(cluster, "history", "--pool", "worker")
        assert shown.returncode == 0, shown.stderr
        lines = shown.stdout.splitlines()
        assert lines[0].split() == ["REVISION", "CONFIG", "TIME", "BY", "CHANGE"]
        assert lines[1].split()[:2] == ["1", first]
        assert "first render of 1 MachineConfigs" in lines[1]
        assert lines[2].split()[:3] == ["2", second, "(target)"]
        assert lines[2].endswith("50-app added") and " render (" in lines[2]

        # roll back: the same pace (maxUnavailable 1), and it says what differs
        back = mcd(cluster, "rollback", "--pool", "worker")
        assert back.returncode == 0, back.stderr
        assert back.stdout.startswith(
            f"Pool worker: rolling back from {second} to {first} (revision 1); "
            "MachineConfigs that differ: 50-app removed."
        )
        wait(lambda: target(cluster, "worker") == first, 10, "pointed back", ctl.log)
        assert roll(cluster, names, first, ctl) == 1
        wait(lambda: pool_condition(cluster, "worker", "Updated").get("status") == "True",
             30, "rolled back", ctl.log)  # fmt: skip
        time.sleep(3)  # three passes: the renderer leaves the rollback alone
        assert target(cluster, "worker") == first
        history = parse_history(get_pool(cluster, "worker")["metadata"]["annotations"][
            HISTORY_ANNOTATION])  # fmt: skip
        assert [(r.revision, r.config) for r in history] == [(2, second), (3, first)]
        assert history[-1].by == "mcd rollback (alice)"
        assert history[-1].change == "rollback to revision 1: 50-app removed"
        again = mcd(cluster, "rollback", "--pool", "worker", "--to-revision", "7")
        assert again.returncode == 1
        assert "pool worker has no revision 7 (revisions: 2, 3)" in again.stderr

        # a MachineConfig changes (the fix): the rollback ends, the fix rolls out
        fix = machine_config("60-fix", "worker", worker("fix", app="threads=16\n"))
        cluster.create(MACHINECONFIGS, fix)
        wait(lambda: target(cluster, "worker") not in (first, second), 30, "the fix", ctl.log)
        third = target(cluster, "worker")
        meta = get_pool(cluster, "worker")["metadata"]
        assert ROLLBACK_ANNOTATION not in (meta.get("annotations") or {})
        assert roll(cluster, names, third, ctl) == 1

        # prune: an orphan goes; nothing in use does
        orphan = {**machine_config("rendered-worker-orphan", "worker", BASE)}
        orphan["metadata"]["annotations"] = {GENERATED_BY: "test"}
        orphan["metadata"]["labels"] = {}  # no pool selects it
        cluster.create(MACHINECONFIGS, orphan)
        time.sleep(1.1)
        dry = mcd(cluster, "prune", "--grace", "1s")
        assert dry.returncode == 0, dry.stderr
        assert dry.stdout.splitlines()[0] == (
            "would delete (dry run; --apply deletes): rendered-worker-orphan"
        )
        assert "1 rendered configs unused; 3 kept" in dry.stdout
        done = mcd(cluster, "prune", "--grace", "1s", "--apply")
        assert done.stdout.splitlines()[0] == "deleted: rendered-worker-orphan"
        left = {m["metadata"]["name"] for m in cluster.kube.request("GET", MACHINECONFIGS)["items"]}
        assert {first, second, third} <= left and "rendered-worker-orphan" not in left

        # deleting the rendered config in use degrades nothing: the controller renders it again
        cluster.kube.request("DELETE", f"{MACHINECONFIGS}/{third}")
        wait(lambda: any(m["metadata"]["name"] == third for m in
                         cluster.kube.request("GET", MACHINECONFIGS)["items"]),
             30, "rendered again", ctl.log)  # fmt: skip
        time.sleep(2)
        for kind in ("Degraded", "RenderDegraded", "NodeDegraded"):
            assert pool_condition(cluster, "worker", kind).get("status") == "False", kind
        assert pool_condition(cluster, "worker", "Updated")["status"] == "True"
        assert all(annotations_of(cluster.get_node(n))[Annotation.STATE] == "Done" for n in names)
    finally:
        assert ctl.stop() == 0, ctl.log()[-3000:]


def test_a_deleted_rendered_config_in_use_degrades_no_node(
    make_node: NodeFactory, kube_cluster: TestCluster, tmp_path: Path
) -> None:
    """A running agent whose current (and desired) rendered config is deleted while no
    controller runs: woken, it stays Done (its on-disk config is the truth); the controller,
    started again, renders the config again and the pool is not degraded."""
    cluster = kube_cluster
    ns = cluster.namespace("ctl")
    cluster.create(MACHINECONFIGS, machine_config("00-worker", "worker", BASE))
    create_pool(cluster, pool("worker", ["worker"], "worker"))
    ctl = ControllerProc(cluster, tmp_path, "a", ns).start()
    try:
        wait(lambda: target(cluster, "worker") != "", 30, "rendered", ctl.log)
        first = target(cluster, "worker")
        (agent,) = start_pool_nodes(cluster, make_node, "worker", 1, first)
        wait(lambda: pool_condition(cluster, "worker", "Updated").get("status") == "True",
             30, "updated", ctl.log)  # fmt: skip
        assert ctl.stop() == 0
        cluster.kube.request("DELETE", f"{MACHINECONFIGS}/{first}")
        cluster.annotate(agent.name, {"mcd-project.github.io/test-wake": "1"})  # a Node change
        time.sleep(4)
        assert agent.annotations()[Annotation.STATE] == "Done"
        assert agent.annotations()[Annotation.CURRENT_CONFIG] == first
        ctl = ControllerProc(cluster, tmp_path, "b", ns).start()
        wait(lambda: any(m["metadata"]["name"] == first for m in
                         cluster.kube.request("GET", MACHINECONFIGS)["items"]),
             30, "rendered again", ctl.log)  # fmt: skip
        time.sleep(2)
        for kind in ("Degraded", "RenderDegraded", "NodeDegraded"):
            assert pool_condition(cluster, "worker", kind).get("status") == "False", kind
        assert agent.annotations()[Annotation.STATE] == "Done"
    finally:
        assert ctl.stop() in (0, None), ctl.log()[-3000:]
