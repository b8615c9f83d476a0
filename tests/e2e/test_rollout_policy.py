"""A pool's rollout policy on a live API server (the fake, or the real kube-apiserver): the
canary goes first; a canary that fails halts the pool, naming the node, with the rest
untouched; a canary that passes lets the rest go once its soak is over (issue 30). No agents
run: the test plays their annotations (:func:`play_agent`)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mcd.cluster.configs import MACHINECONFIGS
from mcd.cluster.node import annotations_of
from mcd.model.node.health import STATE_ANNOTATION
from mcd.model.pool.canary import HALT_ANNOTATION, POLICY_ANNOTATION
from mcd.model.vocabulary import Annotation
from tests.e2e.configs import worker
from tests.e2e.controller_harness import (
    ControllerProc,
    create_pool,
    get_pool,
    label_node,
    machine_config,
    patch_pool,
    pool,
    pool_condition,
    target,
    wait,
)
from tests.e2e.test_controller import BASE, _crds, play_agent  # noqa: F401 - the CRD fixture
from tests.fakes.kubecluster import TestCluster


def desired(cluster: TestCluster, node: str) -> str:
    return str(annotations_of(cluster.get_node(node)).get(Annotation.DESIRED_CONFIG))


def start(
    cluster: TestCluster,
    tmp_path: Path,
    policy: dict[str, object],
    before: Callable[[list[str]], None] = lambda _names: None,
) -> tuple[ControllerProc, list[str], str, str]:
    """Three nodes on the first config, maxUnavailable 3 (without the policy all would go
    at once), then a second config: the controller's pool and both targets."""
    ns = cluster.namespace("ctl")
    cluster.create(MACHINECONFIGS, machine_config("00-worker", "worker", BASE))
    annotations = {POLICY_ANNOTATION: json.dumps(policy)}
    create_pool(cluster, pool("worker", ["worker"], "worker", 3, annotations=annotations))
    ctl = ControllerProc(cluster, tmp_path, "a", ns).start()
    wait(lambda: target(cluster, "worker") != "", 30, "rendered", ctl.log)
    first = target(cluster, "worker")
    names = [cluster.node(n) for n in ("a-canary", "b-rest", "c-rest")]  # upstream order
    for name in names:
        label_node(cluster, name, "worker")
        play_agent(cluster, name, first)
    wait(lambda: pool_condition(cluster, "worker", "Updated").get("status") == "True", 30,
         "all on the first config", ctl.log)  # fmt: skip
    before(names)
    cluster.create(
        MACHINECONFIGS, machine_config("50-app", "worker", worker("app", app="threads=8\n"))
    )
    wait(lambda: target(cluster, "worker") != first, 30, "re-rendered", ctl.log)
    return ctl, names, first, target(cluster, "worker")


def pool_events(cluster: TestCluster) -> list[tuple[str, str, str]]:
    events = cluster.kube.request("GET", "/api/v1/events")["items"]
    return [(e["reason"], e.get("type", ""), e["message"]) for e in events
            if e["involvedObject"].get("kind") == "MachineConfigPool"
            and e["involvedObject"].get("name") == "worker"]  # fmt: skip


def test_a_failing_canary_halts_the_pool_with_the_rest_untouched(
    kube_cluster: TestCluster, tmp_path: Path
) -> None:
    """The canary updates, then its health gate fails on the new config: the pool halts
    (condition, annotation, Warning Event, ``mcd_pool_paused{reason="rollout-halted"}``)
    naming the node; the two other nodes keep the old config. Taking the halt annotation
    off (with the node fixed) resumes the rollout."""
    cluster = kube_cluster
    ctl, (canary, *rest), first, second = start(cluster, tmp_path, {"canary": 1, "soak": "1h"})
    try:
        wait(lambda: desired(cluster, canary) == second, 30, "the canary targeted", ctl.log)
        assert [desired(cluster, n) for n in rest] == [first, first]
        # the pass writes the Node, then the pool's status
        wait(lambda: pool_condition(cluster, "worker", "Canary").get("reason") == "Waiting",
             10, "canary waiting", ctl.log)  # fmt: skip
        assert pool_condition(cluster, "worker", "Canary")["status"] == "False"
        play_agent(cluster, canary, second)
        failed = {"config": second, "result": "failed", "check": "app-probe", "time": "t"}
        cluster.annotate(canary, {STATE_ANNOTATION: json.dumps(failed)})
        wait(lambda: pool_condition(cluster, "worker", "RolloutHalted").get("status") == "True",
             30, "halted", ctl.log)  # fmt: skip
        halted = pool_condition(cluster, "worker", "RolloutHalted")
        assert f"{canary}: health gate failed (app-probe)" in halted["message"]
        assert f"{HALT_ANNOTATION}-" in halted["message"]  # what resumes it
        meta = get_pool(cluster, "worker")["metadata"]
        assert meta["annotations"][HALT_ANNOTATION] == second
        assert any(r == "RolloutHalted" and t == "Warning" and canary in m
                   for r, t, m in pool_events(cluster))  # fmt: skip
        wait(lambda: "rollout-halted" in ctl.get("/metrics")[1], 15, "the paused metric")
        assert 'mcd_pool_paused{pool="worker",reason="rollout-halted"} 1.0' in (
            ctl.get("/metrics")[1])  # fmt: skip
        time.sleep(3)  # three passes: the rest is untouched
        assert [desired(cluster, n) for n in rest] == [first, first]
        # fixed by hand, then resumed
        passed = {"config": second, "result": "passed", "time": "t"}
        cluster.annotate(canary, {STATE_ANNOTATION: json.dumps(passed)})
        patch_pool(cluster, "worker", {"metadata": {"annotations": {HALT_ANNOTATION: None}}})
        wait(lambda: pool_condition(cluster, "worker", "RolloutHalted").get("status") == "False",
             30, "resumed", ctl.log)  # fmt: skip
    finally:
        assert ctl.stop() == 0, ctl.log()[-3000:]


def test_a_passing_canary_lets_the_rest_go_after_the_soak(
    kube_cluster: TestCluster, tmp_path: Path
) -> None:
    cluster = kube_cluster
    ctl, (canary, *rest), first, second = start(cluster, tmp_path, {"canary": 1, "soak": "5s"})
    try:
        wait(lambda: desired(cluster, canary) == second, 30, "the canary targeted", ctl.log)
        play_agent(cluster, canary, second)
        seen: dict[str, Any] = {}  # the condition as read when it said Soaking

        def soaking_now() -> bool:
            seen.clear()
            seen.update(pool_condition(cluster, "worker", "Canary"))
            return seen.get("reason") == "Soaking"

        wait(soaking_now, 30, "soaking", ctl.log)
        soaking = time.monotonic()
        assert "soaking until" in seen["message"]
        time.sleep(2)
        assert [desired(cluster, n) for n in rest] == [first, first]
        wait(lambda: all(desired(cluster, n) == second for n in rest), 30, "the rest", ctl.log)
        assert time.monotonic() - soaking >= 3.0  # the soak (5 s, less the polling slack)
        # the pool's status is written after the pass's node targets: read it once it is
        wait(lambda: pool_condition(cluster, "worker", "Canary").get("reason") == "Passed",
             10, "the canary passed", ctl.log)  # fmt: skip
        assert pool_condition(cluster, "worker", "RolloutHalted") == {}
    finally:
        assert ctl.stop() == 0, ctl.log()[-3000:]


@pytest.mark.fake_only("writes a pod's container statuses (a kubelet would report its own)")
def test_crash_looping_pods_on_the_canary_halt_the_pool(
    kube_cluster: TestCluster, tmp_path: Path
) -> None:
    """The node's health is fine, but a pod on it crash-loops after the update: halted."""
    cluster = kube_cluster
    apps = cluster.namespace("apps")
    running = {"restartCount": 2, "state": {"running": {}}, "name": "c"}

    def crashed_before(names: list[str]) -> None:  # before the update: 2 restarts
        cluster.pod(apps, "web", names[0])
        set_container(cluster, apps, "web", running)

    policy = {"canary": 1, "soak": "1h"}
    ctl, (canary, *rest), first, second = start(cluster, tmp_path, policy, crashed_before)
    try:
        wait(lambda: desired(cluster, canary) == second, 30, "the canary targeted", ctl.log)
        play_agent(cluster, canary, second)
        time.sleep(2)  # restarts before the update do not count
        assert pool_condition(cluster, "worker", "RolloutHalted") == {}
        looping = {"restartCount": 7, "name": "c",
                   "state": {"waiting": {"reason": "CrashLoopBackOff"}}}  # fmt: skip
        set_container(cluster, apps, "web", looping)
        wait(lambda: pool_condition(cluster, "worker", "RolloutHalted").get("status") == "True",
             30, "halted", ctl.log)  # fmt: skip
        message = pool_condition(cluster, "worker", "RolloutHalted")["message"]
        assert f"{canary}: pods crash-looping ({apps}/web; 5 restarts since the update)" in message
        time.sleep(2)
        assert [desired(cluster, n) for n in rest] == [first, first]
    finally:
        assert ctl.stop() == 0, ctl.log()[-3000:]


def set_container(
    cluster: TestCluster, namespace: str, pod: str, status: dict[str, object]
) -> None:
    cluster.kube.request(
        "PATCH", f"/api/v1/namespaces/{namespace}/pods/{pod}/status",
        body={"status": {"containerStatuses": [status]}},
        content_type="application/merge-patch+json",
    )  # fmt: skip
