"""The agent as the DaemonSet's pod on real nodes (issue 42, items 1 and 2).

Two real nodes (a real kubelet, containerd and systemd each; :mod:`tests.nodes.kit`) run the
plain-Kubernetes install with the image built from the ``Containerfile``. The agent pod
manages its node through ``/rootfs`` and the node's systemd over D-Bus, with its pod-bound
token; ``mcd controller``, as its Deployment's pods, rolls a pool out across both (evicting
its own pod too, when it drains the node it runs on: the other replica takes over): real drains (evictions a PodDisruptionBudget answers), files and a unit written
into the node's root, a real reboot of the node, and Done.
"""

from __future__ import annotations

import json
import time
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import yaml

from mcd.model.pool.canary import POLICY_ANNOTATION
from mcd.model.reboots.requests import DONE_ANNOTATION, REQUESTED_ANNOTATION, REQUIRED_ANNOTATION
from mcd.model.vocabulary import Annotation
from tests.nodes import image, kit
from tests.nodes.conftest import IMAGE, INITIAL, NODES, Installed
from tests.nodes.kit import RealNodes, wait
from tests.nodes.loop import FILE, HELLO, UNIT, Timeline, hello_config, machineconfig, pool

pytestmark = [pytest.mark.nodes, pytest.mark.xdist_group("realnode")]
WHY_NOT = kit.unavailable() or image.unavailable()
if WHY_NOT:  # one line, the kit's own reason
    pytest.skip(f"real nodes: {WHY_NOT}", allow_module_level=True)

REPO = Path(__file__).resolve().parents[2]
Obj = dict[str, Any]


def apply(nodes: RealNodes, *docs: Obj) -> None:
    nodes.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(docs))


def done_on(nodes: RealNodes, config: str, node: str) -> bool:
    a = nodes.annotations(node)
    return (a.get(Annotation.CURRENT_CONFIG), a.get(Annotation.STATE)) == (config, "Done")


def test_the_agent_pods_take_the_install_handoff_and_report_done(installed: Installed) -> None:
    """On nodes a bootstrap left the install handoff on (upstream ``loadNodeAnnotations``:
    ``/etc/machine-config-daemon/node-annotations.json`` naming the install's rendered
    config), each agent pod copies the annotations onto its Node, validates the node against
    that config and reports Done; the file is kept as ``node-annotation.json.bak``. The pod is
    the DaemonSet's, on its node, with the ServiceAccount's token and the loaded image."""
    nodes = installed.nodes
    for node in NODES:
        wait(partial(done_on, nodes, INITIAL, node), 180, f"{node} Done on {INITIAL}",
             installed.logs)  # fmt: skip
        pod = installed.agent_pod(node)
        assert pod is not None and pod["spec"]["nodeName"] == node
        spec = pod["spec"]
        assert spec["serviceAccountName"] == "mcd" and spec["hostPID"] and spec["hostNetwork"]
        assert spec["containers"][0]["image"] == IMAGE
        assert nodes.annotations(node)[Annotation.DESIRED_CONFIG] == INITIAL
        listed = nodes.exec(node, "ls", "/etc/machine-config-daemon").stdout.split()
        assert "node-annotation.json.bak" in listed and "node-annotations.json" not in listed
    print(f"\nreal nodes, setup (s): { {k: round(v, 1) for k, v in installed.timings.items()} }")


# -- the rollout loop ----------------------------------------------------------------------------

WORKLOAD = "web"


def workload() -> list[Obj]:
    """Two replicas a PodDisruptionBudget keeps at least one of (minAvailable 1)."""
    labels = {"app": WORKLOAD}
    deployment = {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": WORKLOAD, "namespace": "default"},
        "spec": {"replicas": 2, "selector": {"matchLabels": labels}, "template": {
            "metadata": {"labels": labels},
            "spec": {"terminationGracePeriodSeconds": 2, "containers": [{
                "name": "web", "image": "localhost/rn-busybox:1", "imagePullPolicy": "Never",
                "command": ["/bin/sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"],
            }]},
        }},
    }  # fmt: skip
    pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
           "metadata": {"name": WORKLOAD, "namespace": "default"},
           "spec": {"minAvailable": 1, "selector": {"matchLabels": labels}}}  # fmt: skip
    return [deployment, pdb]


class Watch(Timeline):
    """Each node's steps, from its annotations and its container's exits (a reboot), and the
    fewest healthy pods the budget saw."""

    def __init__(self, nodes: RealNodes, target: str) -> None:
        super().__init__(list(NODES), target, time.monotonic())
        self.nodes = nodes
        self.exits = {n: len(nodes.exits(n)) for n in NODES}
        self.min_healthy = 2

    def poll(self) -> bool:
        now = time.monotonic()
        for node in NODES:
            rebooted = len(self.nodes.exits(node)) > self.exits[node]
            self.see(node, self.nodes.annotations(node), rebooted, now)
        pdb = self.nodes.get("pdb", "-n", "default", WORKLOAD).get("status") or {}
        self.min_healthy = min(self.min_healthy, int(pdb.get("currentHealthy", 2)))
        return self.done()


def test_a_rollout_drains_writes_reboots_and_ends_done_on_both_real_nodes(
    installed: Installed,
) -> None:
    """A pool's first rendered config (a file and an enabled unit, from the empty install
    config: a reboot) rolled out by ``mcd controller`` one node at a time: each node drained
    for real (the workload's pods evicted while its PodDisruptionBudget allows it, started
    again elsewhere), the file and the unit written by the agent pod into the node's root,
    the node rebooted (its container restarts: a new boot, the kubelet and the agent pod come
    back), Done on the target; every node schedulable again, the workload back at 2."""
    nodes = installed.nodes
    for node in NODES:  # the first test leaves them Done on the install's config
        wait(partial(done_on, nodes, INITIAL, node), 180, f"{node} Done", installed.logs)
        nodes.kubectl("label", "node", node, "node-role.kubernetes.io/worker=", "--overwrite")
    apply(nodes, *workload())
    nodes.kubectl("rollout", "status", "-n", "default", f"deployment/{WORKLOAD}",
                  "--timeout=120s")  # fmt: skip
    apply(nodes, hello_config(), pool())
    logs = installed.logs

    def rendered() -> str:
        spec = nodes.get("mcp", "worker").get("spec") or {}
        return str((spec.get("configuration") or {}).get("name") or "")

    wait(lambda: rendered().startswith("rendered-worker-"), 120, "worker rendered", logs)
    target = rendered()
    watch = Watch(nodes, target)
    wait(watch.poll, 900, f"both nodes Done on {target}", logs)
    steps = watch.seen
    print("\n" + watch.line("real-node"))
    installed.timings["rollout"] = max(steps[n]["done"] for n in NODES)
    for node in NODES:
        # what a user sees on the node: the file, the unit known to the node's systemd
        assert nodes.exec(node, "cat", FILE).stdout == HELLO
        assert nodes.exec(node, "systemctl", "is-enabled", UNIT).stdout.strip() == "enabled"
        shown = nodes.exec(node, "systemctl", "show", "-p", "LoadState,ActiveState", UNIT).stdout
        assert "LoadState=loaded" in shown and "ActiveState=active" in shown, shown
        # the health gate after the reboot asked the node's real kubelet (and found it ok)
        gate = json.loads(nodes.exec(node, "cat", "/etc/machine-config-daemon/health-gate.json")
                          .stdout)  # fmt: skip
        assert gate["config"] == target and gate["ok"], gate
        assert {"name": "kubelet", "status": "passed"} in [
            {k: c[k] for k in ("name", "status")} for c in gate["checks"]
        ], gate
        # a real reboot: the node's container ended with systemd's reboot code and came back
        assert any(line.split()[-1] == "133" for line in nodes.exits(node)), nodes.exits(node)
        assert "rebooted" in steps[node] and "drained" in steps[node], steps[node]
        # the agent pod's container, started again by the kubelet after the reboot, resumed
        # the update from its journal (upstream checkStateOnFirstRun's words)
        pod = installed.agent_pod(node)
        assert pod is not None
        log = nodes.kubectl("logs", "-n", "mcd", pod["metadata"]["name"]).stdout
        assert f"Node {node} has rebooted" in log, log[-3000:]
        assert f"Completing update to target MachineConfig: {target}" in log, log[-3000:]
        assert not nodes.node(node)["spec"].get("unschedulable"), f"{node} left cordoned"
        assert nodes.annotations(node)[Annotation.DESIRED_CONFIG] == target
    # one node at a time, each drained before it rebooted
    first, second = sorted(NODES, key=lambda n: steps[n]["done"])
    assert steps[first]["drained"] <= steps[first]["rebooted"] <= steps[first]["done"]
    assert steps[first]["done"] <= steps[second]["drained"]
    assert watch.min_healthy >= 1  # the budget held while pods were evicted
    nodes.kubectl("rollout", "status", "-n", "default", f"deployment/{WORKLOAD}",
                  "--timeout=180s")  # fmt: skip
    # the controller's pods too (drained with the nodes they ran on)
    nodes.kubectl("rollout", "status", "-n", "mcd", "deployment/mcd-controller", "--timeout=180s")


def test_the_os_reboot_sentinel_reboots_a_real_node_through_a_slot(installed: Installed) -> None:
    """Issue 44: unattended upgrades leave ``/var/run/reboot-required`` on one real node (Debian:
    ``/var/run`` is ``/run``, a tmpfs). The agent pod says so on the Node and nothing reboots
    while the pool's rollout policy has no ``"osReboots": true``; with it, the controller
    gives the node the pool's one slot: drained, a real reboot (the node's container ends with
    systemd's reboot code), the health gate asks the node's real kubelet, the request is
    answered, the sentinel is gone with the boot and the node is schedulable and Done again.
    The other node is never asked."""
    nodes = installed.nodes
    node, other = NODES
    config = nodes.annotations(node)[Annotation.CURRENT_CONFIG]
    exits = len(nodes.exits(node))
    nodes.exec(
        node, "sh", "-c", "echo '*** System restart required ***' > /var/run/reboot-required"
    )
    logs = installed.logs

    def asks() -> dict[str, str]:
        return dict(json.loads(nodes.annotations(node).get(REQUIRED_ANNOTATION) or "{}"))

    wait(lambda: asks().get("source") == "/var/run/reboot-required", 180,
         f"{node}: reboot-required on its Node", logs)  # fmt: skip
    time.sleep(5)  # a pass or two of the controller: no slot without "osReboots": true
    assert REQUESTED_ANNOTATION not in nodes.annotations(node)
    assert len(nodes.exits(node)) == exits
    policy = json.dumps({"osReboots": True})
    nodes.kubectl("annotate", "mcp", "worker", f"{POLICY_ANNOTATION}={policy}", "--overwrite")
    try:
        cordoned: list[bool] = []

        def answered() -> bool:
            a = nodes.annotations(node)
            cordoned.append(bool(nodes.node(node)["spec"].get("unschedulable")))
            done = json.loads(a.get(DONE_ANNOTATION) or "{}")
            return bool(a.get(REQUESTED_ANNOTATION)) and done.get("request") == a.get(
                REQUESTED_ANNOTATION) and REQUIRED_ANNOTATION not in a  # fmt: skip

        wait(answered, 600, f"{node}: OS reboot requested, done and answered", logs)
        wait(partial(done_on, nodes, config, node), 180, f"{node} Done again", logs)
        wait(lambda: not nodes.node(node)["spec"].get("unschedulable"), 120,
             f"{node} uncordoned", logs)  # fmt: skip
    finally:
        nodes.kubectl("annotate", "mcp", "worker", f"{POLICY_ANNOTATION}-", check=False)
    assert any(cordoned), "drained (cordoned) before the reboot"
    assert any(line.split()[-1] == "133" for line in nodes.exits(node)[exits:]), nodes.exits(node)
    assert nodes.exec(node, "test", "-e", "/var/run/reboot-required", check=False).returncode == 1
    gate = json.loads(nodes.exec(node, "cat", "/etc/machine-config-daemon/health-gate.json")
                      .stdout)  # fmt: skip
    assert gate["config"] == config and gate["ok"], gate
    assert REQUESTED_ANNOTATION not in nodes.annotations(other)
    reasons = [e["reason"] for e in nodes.get("events", "-A")["items"]
               if e["involvedObject"].get("name") == "worker"]  # fmt: skip
    assert "OSRebootRequested" in reasons, reasons


# -- KubeletConfig on a real kubelet (issue 43, item 2) ------------------------------------------

CONFIG_DIR = "/etc/kubernetes/kubelet.conf.d"
POOL_LABEL = "pools.operator.machineconfiguration.openshift.io/worker"


def config_dir_config(nodes: RealNodes) -> Obj:
    """A user's MachineConfig that has the node's kubelet read its drop-in directory: the
    kit's kubelet runs with ``--config`` only, as most bootstraps do (README, "Plain
    Kubernetes": the one-time step), so a ``kubelet.service`` drop-in adds ``--config-dir``
    to the node's own command line."""
    unit = nodes.exec(NODES[0], "cat", "/etc/systemd/system/kubelet.service").stdout
    start = next(line for line in unit.splitlines() if line.startswith("ExecStart="))
    # the kubelet refuses to start while its --config-dir does not exist
    dropin = (f"[Service]\nExecStartPre=/bin/mkdir -p {CONFIG_DIR}\nExecStart=\n"
              f"{start} --config-dir={CONFIG_DIR}\n")  # fmt: skip
    return machineconfig("60-worker-kubelet-config-dir", {"systemd": {"units": [
        {"name": "kubelet.service", "dropins": [{"name": "10-config-dir.conf",
                                                  "contents": dropin}]}]}},
        role="worker")  # fmt: skip


def test_a_kubeletconfig_max_pods_ends_with_the_real_nodes_reporting_it(
    installed: Installed,
) -> None:
    """``maxPods: 42`` in a KubeletConfig selecting the worker pool: ``mcd controller``
    generates ``99-worker-generated-kubelet`` (the drop-in
    ``/etc/kubernetes/kubelet.conf.d/90-mcd-generated-kubelet.conf``), says Accepted, the pool
    renders it and rolls it out (a reboot each); each node's real kubelet reads the drop-in and
    the Node reports 42 pods of capacity."""
    nodes = installed.nodes
    logs = installed.logs

    def rendered() -> str:
        spec = nodes.get("mcp", "worker").get("spec") or {}
        return str((spec.get("configuration") or {}).get("name") or "")

    for node in NODES:  # as the rollout test leaves them (run alone: that rollout first)
        nodes.kubectl("label", "node", node, "node-role.kubernetes.io/worker=", "--overwrite")
    apply(nodes, hello_config(), pool())
    wait(lambda: rendered().startswith("rendered-worker-"), 120, "worker rendered", logs)
    for node in NODES:
        wait(lambda n=node: done_on(nodes, rendered(), n), 900, f"{node} Done", logs)  # type: ignore[misc]
    before = rendered()
    nodes.kubectl("label", "mcp", "worker", f"{POOL_LABEL}=", "--overwrite")
    kubelet_config = {
        "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "KubeletConfig",
        "metadata": {"name": "max-pods"},
        "spec": {"machineConfigPoolSelector": {"matchLabels": {POOL_LABEL: ""}},
                 "kubeletConfig": {"maxPods": 42}},
    }  # fmt: skip
    # both in one rollout: the pool paused until its render holds both (as a user would)
    nodes.kubectl("patch", "mcp", "worker", "--type", "merge", "-p", '{"spec":{"paused":true}}')
    apply(nodes, config_dir_config(nodes), kubelet_config)

    def accepted() -> bool:
        conditions = (nodes.get("kubeletconfig", "max-pods").get("status") or {}).get(
            "conditions") or []  # fmt: skip
        return [(c["type"], c["status"]) for c in conditions] == [("Accepted", "True"),
                                                                 ("Success", "True")]  # fmt: skip

    wait(accepted, 120, "KubeletConfig max-pods Accepted", logs)
    wanted = {"99-worker-generated-kubelet", "60-worker-kubelet-config-dir"}
    wait(lambda: wanted <= {
        s["name"] for s in (nodes.get("mcp", "worker")["spec"]["configuration"]["source"])},
        120, "the pool renders the generated config", logs)  # fmt: skip
    assert rendered() != before
    nodes.kubectl("patch", "mcp", "worker", "--type", "merge", "-p", '{"spec":{"paused":false}}')
    target = rendered()
    watch = Watch(nodes, target)
    wait(watch.poll, 900, f"both nodes Done on {target}", logs)
    print(f"\nKubeletConfig rollout (s): { {n: round(watch.seen[n]['done'], 1) for n in NODES} }")
    for node in NODES:
        dropin = nodes.exec(node, "cat", f"{CONFIG_DIR}/90-mcd-generated-kubelet.conf").stdout
        assert "maxPods: 42" in dropin, dropin
        wait(lambda n=node: nodes.node(n)["status"]["capacity"]["pods"] == "42", 120,  # type: ignore[misc]
             f"{node} reports 42 pods of capacity", logs)  # fmt: skip
        assert nodes.node(node)["status"]["allocatable"]["pods"] == "42"
