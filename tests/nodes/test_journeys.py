"""The journeys of issue 40 on real nodes (issue 42, item 4): the same two nodes and install as
:mod:`tests.nodes.test_daemonset` (the session's ``installed``), the operator's steps run as an
operator runs them (the ``mcd`` command line on the host, ``kubectl``), in this order:

1. A canary whose health gate fails (an admin's required check in
   ``/etc/mcd/health.d/required.d`` on the node, run by the agent pod in the node's root) halts
   the pool after its reboot update; ``mcd rollback --pool worker``, as the halt message says,
   retargets the canary (Degraded, cordoned): Done on the old config, uncordoned, its gate
   state cleared; the other node never left that config.
2. A failing gate halts a rebootless change; the check is fixed on the nodes and the resume
   command ``mcd status --cluster`` prints is run with kubectl: the canary's gate runs again
   and passes, the rollout completes on both nodes, no halt after the resume.
3. A node that boots later (``realnode.sh node-up``: no install-time config, no handoff) gets
   its agent pod from the DaemonSet, reports Done on the empty config; labelled into the pool,
   it is drained, written, rebooted once and Done on the pool's config, uncordoned.

The join through ``mcd server`` (a node that comes up already on its pool's config, no drain,
no reboot) is not run here: the kit boots a node's root straight after copying it and starts
its kubelet in that same boot, so there is no stage before the kubelet where Ignition or ``mcd
join`` (``systemd/mcd-join.service``, which the kubelet waits for on a real host) could write
the root, and the DaemonSet (it tolerates every taint) starts the agent pod at once.
``tests/e2e/test_server_join.py`` runs that join with the real Ignition.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import subprocess
import sys
import time
from functools import partial
from typing import Any

import pytest

from mcd.model.node.health import GATE_ANNOTATION, REQUIRED_DIR, STATE_ANNOTATION
from mcd.model.pool.canary import HALT_ANNOTATION, POLICY_ANNOTATION
from mcd.model.pool.rollout import condition
from mcd.model.vocabulary import EMPTY_CONFIG_NAME, Annotation
from tests.nodes.conftest import NODES, REPO, Installed, health_conf, host_kubeconfig
from tests.nodes.kit import RealNodes, wait
from tests.nodes.loop import FILE, HELLO, UNIT, hello_config, machineconfig, pool
from tests.nodes.test_daemonset import apply, done_on, workload

pytestmark = [pytest.mark.nodes, pytest.mark.xdist_group("realnode")]

Obj = dict[str, Any]
POLICY = {"canary": 1, "soak": "10s", "maxUnhealthy": 0}
CHECK = f"{REQUIRED_DIR}/50-app-probe"
FAILING = "#!/bin/sh\necho 'app probe: connection refused' >&2\nexit 1\n"
APP = "/etc/mcd-realnode/app.conf"
SECRET_PATH = "/var/lib/kubelet/config.json"
SECRET = '{"auths":{"registry.example.com":{"auth":"bmV3LXNlY3JldA=="}}}'
RESUME = re.compile(r"kubectl annotate (?:mcp|machineconfigpool) worker \S+/rollout-halted-")
JOINER = "realnode-3"


def data_url(text: str) -> str:
    return "data:," + "".join(c if c.isalnum() or c in "=._-" else f"%{ord(c):02X}" for c in text)


def file_config(name: str, path: str, text: str, mode: int = 0o644) -> Obj:
    files = [{"path": path, "mode": mode, "contents": {"source": data_url(text)}}]
    return machineconfig(name, {"storage": {"files": files}}, role="worker")


def target(nodes: RealNodes) -> str:
    spec = nodes.get("mcp", "worker").get("spec") or {}
    return str((spec.get("configuration") or {}).get("name") or "")


def pool_condition(nodes: RealNodes, kind: str) -> Obj:
    status = nodes.get("mcp", "worker").get("status") or {}
    return dict(condition(status.get("conditions") or [], kind) or {})


def halted(nodes: RealNodes) -> bool:
    return pool_condition(nodes, "RolloutHalted").get("status") == "True"


def updated(nodes: RealNodes) -> bool:
    return pool_condition(nodes, "Updated").get("status") == "True"


def desired(nodes: RealNodes, node: str) -> str:
    return nodes.annotations(node).get(Annotation.DESIRED_CONFIG, "")


def cordoned(nodes: RealNodes, node: str) -> bool:
    return bool(nodes.node(node)["spec"].get("unschedulable"))


def reboots(nodes: RealNodes, node: str) -> list[str]:
    return [line for line in nodes.exits(node) if line.split()[-1] == "133"]


def mcd(nodes: RealNodes, *args: str) -> subprocess.CompletedProcess[str]:
    """The ``mcd`` command line on the host, with the cluster's admin kubeconfig."""
    env = {"PYTHONPATH": str(REPO), "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
           "USER": "admin", "HOME": str(nodes.workdir)}  # fmt: skip
    return subprocess.run([sys.executable, "-m", "mcd", *args, "--kubeconfig",
                           nodes.env["KUBECONFIG"]], capture_output=True, text=True, env=env,
                          timeout=120, check=False)  # fmt: skip


def failing_check(nodes: RealNodes, node: str, on: bool) -> None:
    """The admin's required check on ``node`` (it fails), or none."""
    if on:
        nodes.exec(node, "sh", "-c", f"mkdir -p {REQUIRED_DIR} && cat > {CHECK} && "
                   f"chmod 755 {CHECK}", stdin=FAILING)  # fmt: skip
    else:
        nodes.exec(node, "rm", "-f", CHECK)


def canary_of(nodes: RealNodes, config: str, installed: Installed) -> str:
    wait(lambda: any(desired(nodes, n) == config for n in NODES), 120, "the canary targeted",
         installed.logs)  # fmt: skip
    (canary,) = [n for n in NODES if desired(nodes, n) == config]
    return canary


def rerendered(nodes: RealNodes, installed: Installed, *old: str) -> str:
    wait(lambda: target(nodes) not in ("", *old), 120, "the pool re-rendered", installed.logs)
    return target(nodes)


@pytest.fixture(scope="module")
def worker_pool(installed: Installed) -> str:
    """Both nodes Done on the worker pool's config, a workload under its budget running (the
    rollout test leaves them so; run alone, this rolls the pool's first config out)."""
    nodes = installed.nodes
    for node in NODES:
        nodes.kubectl("label", "node", node, "node-role.kubernetes.io/worker=", "--overwrite")
    apply(nodes, *workload())
    apply(nodes, hello_config(), pool())
    first = rerendered(nodes, installed)
    for node in NODES:
        wait(partial(done_on, nodes, first, node), 900, f"{node} Done on {first}",
             installed.logs)  # fmt: skip
    return first


def test_a_canary_failing_its_gate_halts_the_pool_and_mcd_rollback_brings_it_back(
    installed: Installed, worker_pool: str
) -> None:
    nodes, first, logs = installed.nodes, worker_pool, installed.logs
    nodes.kubectl("annotate", "mcp", "worker", "--overwrite",
                  f"{POLICY_ANNOTATION}={json.dumps(POLICY)}",
                  f"{GATE_ANNOTATION}=settle=0,max_boots=1")  # fmt: skip
    for node in NODES:
        failing_check(nodes, node, on=True)
    before = {n: len(reboots(nodes, n)) for n in NODES}
    apply(nodes, file_config("50-worker-app", APP, "threads=8\n"))  # a new file: a reboot
    second = rerendered(nodes, installed, first)
    canary = canary_of(nodes, second, installed)
    (rest,) = [n for n in NODES if n != canary]

    wait(lambda: halted(nodes), 600, "the pool halted", logs)
    message = pool_condition(nodes, "RolloutHalted")["message"]
    assert f"{canary}: health gate failed (required.d/50-app-probe)" in message, message
    assert "mcd rollback --pool worker" in message, message
    wait(lambda: "not trying it again" in nodes.annotations(canary).get(Annotation.REASON, ""),
         600, "the canary gave the config up", logs)  # fmt: skip
    a = nodes.annotations(canary)
    assert (a[Annotation.CURRENT_CONFIG], a[Annotation.STATE]) == (first, "Degraded"), a
    assert desired(nodes, canary) == second and cordoned(nodes, canary)
    assert desired(nodes, rest) == first
    # the canary really booted into the new config (and back out of it)
    assert len(reboots(nodes, canary)) > before[canary], nodes.exits(canary)

    # the way out the halt message names, as an operator runs it
    back = mcd(nodes, "rollback", "--pool", "worker")
    assert back.returncode == 0, back.stderr
    assert back.stdout.startswith(f"Pool worker: rolling back from {second} to {first}"), back
    wait(lambda: desired(nodes, canary) == first, 120, "the canary retargeted", logs)
    wait(partial(done_on, nodes, first, canary), 600, f"{canary} Done on {first}", logs)
    wait(lambda: not cordoned(nodes, canary), 120, "the canary uncordoned", logs)
    wait(lambda: STATE_ANNOTATION not in nodes.annotations(canary), 120,
         "the stale gate state cleared", logs)  # fmt: skip
    wait(lambda: updated(nodes), 120, "the pool back on its first config", logs)
    wait(lambda: not halted(nodes), 120, "the halt over", logs)
    # on the canary's root: the old config (the new file gone), the other node untouched
    assert nodes.exec(canary, "test", "-e", APP, check=False).returncode == 1
    assert nodes.exec(canary, "cat", FILE).stdout == HELLO
    assert desired(nodes, rest) == first and done_on(nodes, first, rest)
    assert len(reboots(nodes, rest)) == before[rest], nodes.exits(rest)
    # the canary's agent pod came back with its node's last reboot: its readiness probe may
    # not have passed yet, which status rightly names; it says nothing is left once it has
    wait(lambda: "Next: nothing to do" in mcd(nodes, "status", "--cluster").stdout, 180,
         "mcd status --cluster: nothing to do", logs)  # fmt: skip
    shown = mcd(nodes, "status", "--cluster")
    assert shown.returncode == 0, shown.stderr
    assert "health gate failed" not in shown.stdout, shown.stdout
    assert "Next: nothing to do" in shown.stdout, shown.stdout
    print(f"\nreal nodes, canary {canary}: halted, rolled back to {first}; "
          f"reboots {[len(reboots(nodes, n)) - before[n] for n in NODES]}")  # fmt: skip


def test_the_printed_resume_command_reruns_the_gate_and_the_rollout_completes_on_both(
    installed: Installed, worker_pool: str
) -> None:
    nodes, first, logs = installed.nodes, worker_pool, installed.logs
    nodes.kubectl("annotate", "mcp", "worker", "--overwrite",
                  f"{POLICY_ANNOTATION}={json.dumps(POLICY)}", f"{GATE_ANNOTATION}=settle=0")  # fmt: skip
    # the first journey's change taken back (a MachineConfig change ends a rollback's hold)
    nodes.kubectl("delete", "mc", "50-worker-app", "--ignore-not-found")
    wait(lambda: target(nodes) == first, 120, f"the pool on {first} again", logs)
    for node in NODES:
        wait(partial(done_on, nodes, first, node), 600, f"{node} Done on {first}", logs)
        failing_check(nodes, node, on=True)
    before = {n: len(reboots(nodes, n)) for n in NODES}
    # a rebootless change (the pull secret: no drain, no reboot); the gate runs at once
    apply(nodes, file_config("50-worker-secret", SECRET_PATH, SECRET, 0o600))
    third = rerendered(nodes, installed, first)
    canary = canary_of(nodes, third, installed)
    (rest,) = [n for n in NODES if n != canary]
    wait(lambda: halted(nodes), 600, "the pool halted", logs)
    wait(lambda: "not trying it again" in nodes.annotations(canary).get(Annotation.REASON, ""),
         600, "the canary gave the config up", logs)  # fmt: skip
    assert desired(nodes, rest) == first

    # fixed on the nodes; then the resume command exactly as the project prints it
    for node in NODES:
        failing_check(nodes, node, on=False)
    shown = mcd(nodes, "status", "--cluster")
    assert "rollout-halted" in shown.stdout, shown.stdout
    printed = RESUME.findall(shown.stdout)
    assert printed, shown.stdout
    resume = shlex.split(printed[0])
    assert resume[0] == "kubectl"
    nodes.kubectl(*resume[1:])

    halts_after_resume: list[str] = []

    def rolled_out() -> bool:
        notes = nodes.get("mcp", "worker")["metadata"].get("annotations") or {}
        if HALT_ANNOTATION in notes:
            halts_after_resume.append(notes[HALT_ANNOTATION])
        return all(done_on(nodes, third, n) for n in NODES)

    wait(rolled_out, 600, f"both nodes Done on {third}", logs)
    assert halts_after_resume == []
    wait(lambda: updated(nodes), 120, "the pool on its new config", logs)
    assert not halted(nodes)
    resumed = pool_condition(nodes, "RolloutHalted")
    assert resumed["reason"] == "Resumed", resumed
    assert f"health gate re-run requested on {canary}" in resumed["message"], resumed
    state = json.loads(nodes.annotations(canary)[STATE_ANNOTATION])
    assert (state["config"], state["result"]) == (third, "passed"), state
    assert "retry" in state  # the verdict answers the controller's request
    digest = hashlib.sha256(SECRET.encode()).hexdigest()
    for node in NODES:  # on each node's root, and no reboot for it
        written = nodes.exec(node, "sha256sum", SECRET_PATH).stdout.split()[0]
        assert written == digest, f"{node}: {SECRET_PATH} not the new pull secret"
        assert len(reboots(nodes, node)) == before[node], nodes.exits(node)
        assert not cordoned(nodes, node)


def test_a_node_that_boots_later_joins_the_pool_and_ends_done_on_its_config(
    installed: Installed, worker_pool: str
) -> None:
    nodes, logs = installed.nodes, installed.logs
    config = target(nodes)
    wait(lambda: updated(nodes), 600, "the pool on its config", logs)
    start = time.monotonic()
    nodes.node_up(JOINER)  # the kit imports the loaded image while the node boots
    # what the node's installer leaves (the API server's address; its kubelet's health port)
    nodes.exec(JOINER, "sh", "-c", "mkdir -p /etc/kubernetes && "
               "cat > /etc/kubernetes/kubeconfig", stdin=host_kubeconfig(nodes))  # fmt: skip
    nodes.exec(JOINER, "sh", "-c", "mkdir -p /etc/mcd && cat > /etc/mcd/health.conf",
               stdin=health_conf(nodes, JOINER))  # fmt: skip
    # a real node's installer writes them before its kubelet runs; here the DaemonSet's pod
    # may have started first (without the API server's address): it starts again with them
    early = installed.agent_pod(JOINER)
    if early is not None:
        nodes.kubectl("delete", "pod", "-n", "mcd", early["metadata"]["name"], "--wait=false")

    def joiner_log() -> str:
        return installed.agent_log(JOINER)

    wait(partial(installed.agent_running, JOINER), 300, f"the agent pod Ready on {JOINER}",
         joiner_log, logs)  # fmt: skip
    wait(partial(done_on, nodes, EMPTY_CONFIG_NAME, JOINER), 300,
         f"{JOINER} Done on {EMPTY_CONFIG_NAME}", joiner_log)  # fmt: skip
    joined = time.monotonic() - start
    assert not reboots(nodes, JOINER) and not cordoned(nodes, JOINER)

    nodes.kubectl("label", "node", JOINER, "node-role.kubernetes.io/worker=")  # into the pool
    wait(partial(done_on, nodes, config, JOINER), 600, f"{JOINER} Done on {config}",
         joiner_log, logs)  # fmt: skip
    wait(lambda: not cordoned(nodes, JOINER), 120, f"{JOINER} uncordoned", joiner_log)
    done = time.monotonic() - start
    a = nodes.annotations(JOINER)
    assert a[Annotation.DESIRED_CONFIG] == config
    assert a[Annotation.LAST_APPLIED_DRAIN] == f"uncordon-{config}", a
    # every file was new: one drain, one reboot, no more
    assert len(reboots(nodes, JOINER)) == 1, nodes.exits(JOINER)
    assert nodes.exec(JOINER, "cat", FILE).stdout == HELLO
    assert nodes.exec(JOINER, "systemctl", "is-enabled", UNIT).stdout.strip() == "enabled"
    log = joiner_log()
    assert f'"{EMPTY_CONFIG_NAME}" not found' not in log, log[-3000:]
    assert f"Completing update to target MachineConfig: {config}" in log, log[-3000:]
    for node in NODES:  # the others stay where they were
        assert done_on(nodes, config, node)

    def counted() -> bool:
        status = nodes.get("mcp", "worker").get("status") or {}
        return (status.get("machineCount"), status.get("updatedMachineCount")) == (3, 3)

    wait(counted, 120, "the pool counting 3 nodes, 3 updated", logs)
    pod = installed.agent_pod(JOINER)
    assert pod is not None
    restarts = [c.get("restartCount") for c in pod["status"]["containerStatuses"]]
    print(f"\nreal nodes, {JOINER} joined: node-up to Done on {EMPTY_CONFIG_NAME} "
          f"{joined:.1f} s, to Done on {config} {done:.1f} s; agent pod restarts {restarts}")  # fmt: skip
