"""The README's "Canary, halt" journey, end to end (issue 40): the controller and two agents
(host processes on temp roots) on a live API server (the fake, or the real kube-apiserver),
the operator's steps run as an operator runs them (the ``mcd`` command line, ``kubectl``).

1. A change whose health gate fails on the canary halts the pool; ``mcd rollback --pool
   worker``, as the halt message suggests, reaches the canary (Degraded and cordoned by its
   failed reboot update): it goes back to the previous config, is Done and uncordoned, its
   gate state is clean, and ``mcd status --cluster`` shows no stale failure.
2. A failing gate halts the pool; the gate is fixed and the resume command the project
   prints is run with kubectl: the canary's gate runs again, passes, and the rollout
   completes with no halt after the resume.
"""

from __future__ import annotations

import json
import re
import shlex
import time
from pathlib import Path

from mcd.cluster.configs import MACHINECONFIGS
from mcd.cluster.node import annotations_of
from mcd.model.node.health import GATE_ANNOTATION, REQUIRED_DIR, STATE_ANNOTATION
from mcd.model.pool.canary import HALT_ANNOTATION, POLICY_ANNOTATION
from mcd.model.vocabulary import Annotation
from tests.e2e.configs import worker
from tests.e2e.conftest import NodeFactory
from tests.e2e.controller_harness import (
    ControllerProc,
    Rebooter,
    create_pool,
    get_pool,
    machine_config,
    pool,
    pool_condition,
    target,
    wait,
)
from tests.e2e.harness import AgentNode
from tests.e2e.test_controller import (  # noqa: F401 - the CRD fixture
    BASE,
    _crds,
    rendered,
    start_pool_nodes,
)
from tests.e2e.test_rollback import mcd
from tests.fakes.kubecluster import TestCluster
from tests.integration.test_kubectl import kubectl

CHECK = f"{REQUIRED_DIR}/50-app-probe"
FAILING = "#!/bin/sh\necho 'app probe: connection refused' >&2\nexit 1\n"
POLICY = {"canary": 1, "soak": "10s", "maxUnhealthy": 0}
RESUME = re.compile(r"kubectl annotate (?:mcp|machineconfigpool) worker \S+/rollout-halted-")


def start(
    cluster: TestCluster, tmp_path: Path, make_node: NodeFactory, gate: str
) -> tuple[ControllerProc, list[AgentNode], str]:
    """The controller, the worker pool with the canary policy and the gate settings ``gate``,
    two agents Done on its first config, each with a failing admin check on disk."""
    ns = cluster.namespace("ctl")
    cluster.create(MACHINECONFIGS, machine_config("00-worker", "worker", BASE))
    annotations = {POLICY_ANNOTATION: json.dumps(POLICY), GATE_ANNOTATION: gate}
    create_pool(cluster, pool("worker", ["worker"], "worker", annotations=annotations))
    ctl = ControllerProc(cluster, tmp_path, "a", ns).start()
    first = rendered(cluster, "worker", ctl)
    nodes = start_pool_nodes(cluster, make_node, "worker", 2, first)
    wait(lambda: pool_condition(cluster, "worker", "Updated").get("status") == "True",
         60, "the pool on its first config", ctl.log)  # fmt: skip
    for node in nodes:  # the admin's check: it fails on every node
        node.path(CHECK).parent.mkdir(parents=True, exist_ok=True)
        node.path(CHECK).write_text(FAILING)
        node.path(CHECK).chmod(0o755)
    return ctl, nodes, first


def desired(node: AgentNode) -> str:
    return node.annotations().get(Annotation.DESIRED_CONFIG, "")


def canary_of(nodes: list[AgentNode], second: str, ctl: ControllerProc) -> AgentNode:
    wait(lambda: any(desired(n) == second for n in nodes), 60, "the canary targeted", ctl.log)
    (canary,) = [n for n in nodes if desired(n) == second]
    return canary


def halted(cluster: TestCluster) -> bool:
    return pool_condition(cluster, "worker", "RolloutHalted").get("status") == "True"


def cordoned(cluster: TestCluster, node: AgentNode) -> bool:
    return bool((cluster.get_node(node.name).get("spec") or {}).get("unschedulable"))


def test_mcd_rollback_reaches_the_canary_whose_gate_failed(
    make_node: NodeFactory, kube_cluster: TestCluster, tmp_path: Path
) -> None:
    cluster = kube_cluster
    ctl, nodes, first = start(cluster, tmp_path, make_node, "settle=0,max_boots=1")
    try:
        with Rebooter(nodes) as rebooter:
            # a reboot update (app.conf): drained (cordoned), rebooted, its gate fails
            app = machine_config("50-app", "worker", worker("app", app="threads=8\n"))
            cluster.create(MACHINECONFIGS, app)
            wait(lambda: target(cluster, "worker") != first, 30, "re-rendered", ctl.log)
            second = target(cluster, "worker")
            canary = canary_of(nodes, second, ctl)
            (rest,) = [n for n in nodes if n is not canary]
            wait(lambda: halted(cluster), 180, "the pool halted", ctl.log, canary.log)
            message = pool_condition(cluster, "worker", "RolloutHalted")["message"]
            assert f"{canary.name}: health gate failed (required.d/50-app-probe)" in message
            assert "mcd rollback --pool worker" in message
            canary.wait_for(lambda: "not trying it again" in canary.annotations().get(
                Annotation.REASON, ""), 120, "the canary gave the config up")  # fmt: skip
            canary.wait_state("Degraded", first)  # rolled back on disk, still given second
            assert desired(canary) == second and cordoned(cluster, canary)
            assert desired(rest) == first

            # the way out the halt message names
            back = mcd(cluster, "rollback", "--pool", "worker")
            assert back.returncode == 0, back.stderr
            assert back.stdout.startswith(f"Pool worker: rolling back from {second} to {first}")
            canary.wait_for(lambda: desired(canary) == first, 60, "the canary retargeted")
            canary.wait_state("Done", first, timeout=60)
            wait(lambda: not cordoned(cluster, canary), 60, "the canary uncordoned",
                 ctl.log, canary.log)  # fmt: skip
            canary.wait_for(lambda: STATE_ANNOTATION not in canary.annotations(), 30,
                            "the stale gate state cleared")  # fmt: skip
            assert "mcd_health_gate_failed 0.0" in canary.metrics()
            wait(lambda: pool_condition(cluster, "worker", "Updated").get("status") == "True",
                 60, "the pool back on its first config", ctl.log)  # fmt: skip
            assert desired(rest) == first
            wait(lambda: not halted(cluster), 30, "the halt over",
                 lambda: str(get_pool(cluster, "worker")), ctl.log)  # fmt: skip
            assert rebooter.errors == []

        shown = mcd(cluster, "status", "--cluster")
        assert shown.returncode == 0, shown.stderr
        assert "MCDHealthGateFailed" not in shown.stdout, shown.stdout
        assert "health gate failed" not in shown.stdout, shown.stdout
        row = next(line for line in shown.stdout.splitlines() if line.startswith("worker "))
        assert row.split()[-2:] == ["=", "-"], shown.stdout  # on its target, not stopped
        assert "Next: nothing to do" in shown.stdout, shown.stdout
    finally:
        assert ctl.stop() == 0, ctl.log()[-3000:]


def test_the_printed_resume_command_reruns_the_gate_and_the_rollout_completes(
    make_node: NodeFactory, kube_cluster: TestCluster, tmp_path: Path
) -> None:
    cluster = kube_cluster
    ctl, nodes, first = start(cluster, tmp_path, make_node, "settle=0")
    try:
        # a rebootless change (the pull secret: no drain, no reboot); the gate runs at once
        secret = '{"auths":{"registry.example.com":{"auth":"bmV3LXNlY3JldA=="}}}'
        cluster.create(MACHINECONFIGS, machine_config("50-secret", "worker",
                                                      worker("secret", secret=secret)))  # fmt: skip
        wait(lambda: target(cluster, "worker") != first, 30, "re-rendered", ctl.log)
        second = target(cluster, "worker")
        canary = canary_of(nodes, second, ctl)
        (rest,) = [n for n in nodes if n is not canary]
        wait(lambda: halted(cluster), 120, "the pool halted", ctl.log, canary.log)
        # the agent spends its gate attempts and stops trying this config
        canary.wait_for(lambda: "not trying it again" in canary.annotations().get(
            Annotation.REASON, ""), 120, "the canary gave the config up")  # fmt: skip

        # fixed on the node; then the resume command exactly as the project prints it
        for node in nodes:
            node.path(CHECK).unlink()
        shown = mcd(cluster, "status", "--cluster")
        assert "rollout-halted" in shown.stdout, shown.stdout
        printed = RESUME.findall(shown.stdout)
        assert printed, shown.stdout
        resume = shlex.split(printed[0])
        assert resume[0] == "kubectl"
        ran = kubectl(cluster, tmp_path, *resume[1:])
        assert ran.returncode == 0, ran.stderr

        halts_after_resume = []
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:  # no halt again, until every node is on second
            pool_now = get_pool(cluster, "worker")
            if HALT_ANNOTATION in (pool_now["metadata"].get("annotations") or {}):
                halts_after_resume.append(pool_now["metadata"]["annotations"][HALT_ANNOTATION])
            a = [annotations_of(cluster.get_node(n.name)) for n in nodes]
            if all(x.get(Annotation.CURRENT_CONFIG) == second and
                   x.get(Annotation.STATE) == "Done" for x in a):  # fmt: skip
                break
            time.sleep(0.3)
        else:
            conditions = get_pool(cluster, "worker")["status"]["conditions"]
            raise AssertionError(f"rollout did not complete: {conditions}\n{a}\n"
                                 f"{ctl.log()[-3000:]}\n{canary.log()[-3000:]}")  # fmt: skip
        assert halts_after_resume == []
        wait(lambda: pool_condition(cluster, "worker", "Updated").get("status") == "True",
             60, "the pool on its new config", ctl.log)  # fmt: skip
        assert not halted(cluster)
        resumed = pool_condition(cluster, "worker", "RolloutHalted")
        assert resumed["reason"] == "Resumed"
        assert f"health gate re-run requested on {canary.name}" in resumed["message"]
        state = json.loads(canary.annotations()[STATE_ANNOTATION])
        assert (state["config"], state["result"]) == (second, "passed")
        assert "retry" in state  # the verdict answers the controller's request
        assert "mcd_health_gate_failed 0.0" in canary.metrics()
        assert rest.annotations()[Annotation.CURRENT_CONFIG] == second
    finally:
        assert ctl.stop() == 0, ctl.log()[-3000:]
