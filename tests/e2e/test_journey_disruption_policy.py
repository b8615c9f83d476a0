"""Journey (issue 43, 1): on a cluster without the Machine Config Operator, an administrator's
node disruption policy makes a rollout cheaper.

``mcd controller`` creates ``MachineConfiguration/cluster`` and publishes its policies, as
upstream's operator (``syncMachineConfiguration``); ``kubectl patch`` (what ``kubectl edit``
sends) adds a policy for the app's directory; the controller publishes it merged over the
defaults; ``mcd plan --pool`` shows the change to that file cost a restart of the app's
service instead of a drain and a reboot; the pool rolls out and the node ends Done on the new
config without a drain or a reboot. On a real kube-apiserver with upstream's CRD (its CEL
rules run), and on the fake.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from mcd.cluster.configs import MACHINECONFIGS
from mcd.cluster.policies import MACHINECONFIGURATION, SOURCE
from mcd.model.disruption.policy import DEFAULT_POLICIES
from mcd.model.vocabulary import Annotation
from tests.e2e.configs import worker
from tests.e2e.conftest import NodeFactory
from tests.e2e.controller_harness import (
    ControllerProc,
    boot_on_rendered,
    create_pool,
    label_node,
    machine_config,
    patch_pool,
    pool,
    pool_condition,
    target,
    wait,
)
from tests.e2e.harness import REPO
from tests.e2e.test_controller import (
    BASE,
    _crds,  # noqa: F401 - the CRD fixture (autouse there)
    rendered,
)
from tests.e2e.test_mcn_degraded import MACHINE_CONFIGURATIONS, MC_CRD
from tests.fakes.kubecluster import TestCluster
from tests.fakes.realcluster import install_crd
from tests.integration.test_kubectl import kubectl

Obj = dict[str, Any]
POLICY = {"files": [{"path": "/etc/app", "actions": [
    {"type": "Restart", "restart": {"serviceName": "app.service"}}]}]}  # fmt: skip


@pytest.fixture
def crd(kube_cluster: TestCluster) -> None:
    """On a real kube-apiserver: the shipped MachineConfiguration CRD (the fake serves it)."""
    if kube_cluster.fake is None:
        install_crd(kube_cluster.kube, yaml.safe_load(MC_CRD.read_text()), MACHINE_CONFIGURATIONS)


def published(cluster: TestCluster) -> Obj:
    """MachineConfiguration/cluster once its status is for its current spec ({} before)."""
    try:
        obj = cluster.kube.request("GET", MACHINECONFIGURATION)
    except Exception:
        return {}
    status = obj.get("status") or {}
    if status.get("observedGeneration") != obj["metadata"].get("generation"):
        return {}
    return obj


def cluster_files(obj: Obj) -> list[Obj]:
    files: list[Obj] = obj["status"]["nodeDisruptionPolicyStatus"]["clusterPolicies"]["files"]
    return files


def plan_pool(cluster: TestCluster) -> tuple[dict[str, Any], str]:
    """``mcd plan --pool worker``, as JSON and as text."""
    out = []
    for extra in (["-o", "json"], []):
        done = subprocess.run(
            [sys.executable, "-m", "mcd", "plan", "--pool", "worker",
             "--kubeconfig", str(cluster.kubeconfig), *extra],
            check=False, capture_output=True, text=True, timeout=60,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        out.append(done.stdout)
    return json.loads(out[0]), out[1]


@pytest.mark.usefixtures("crd")
def test_an_edited_policy_makes_the_rollout_restart_a_service_instead_of_rebooting(
    make_node: NodeFactory, kube_cluster: TestCluster, tmp_path: Path
) -> None:
    cluster = kube_cluster
    ns = cluster.namespace("ctl")
    cluster.create(MACHINECONFIGS, machine_config("00-worker", "worker", BASE))
    create_pool(cluster, pool("worker", ["worker"], "worker"))
    ctl = ControllerProc(cluster, tmp_path, "a", ns).start()
    try:
        first = rendered(cluster, "worker", ctl)
        # created and published as upstream's operator does: the defaults alone
        wait(lambda: bool(published(cluster)), 60, "MachineConfiguration published", ctl.log)
        obj = published(cluster)
        assert obj["spec"]["managementState"] == "Managed"
        assert len(cluster_files(obj)) == len(DEFAULT_POLICIES.files)
        node = make_node("worker-0", drain_mode="controller")
        label_node(cluster, node.name, "worker")
        boot_on_rendered(cluster, node, first)
        node.wait_ready()
        node.wait_state("Done", first, timeout=60)
        # a change to the app's config, held (paused) while its cost is looked at
        patch_pool(cluster, "worker", {"spec": {"paused": True}})
        app = worker("app", app="threads=8\n")
        cluster.create(MACHINECONFIGS, machine_config("50-worker-app", "worker", app))
        wait(lambda: target(cluster, "worker") != first, 60, "re-rendered", ctl.log)
        second = target(cluster, "worker")
        before, _ = plan_pool(cluster)
        (row,) = before["nodes"]
        assert (row["cost"], row["drain"], row["reboot"]) == ("reboot", True, True)
        # the administrator's edit
        patched = kubectl(cluster, tmp_path, "patch", "machineconfiguration", "cluster",
                          "--type", "merge",
                          "-p", json.dumps({"spec": {"nodeDisruptionPolicy": POLICY}}))  # fmt: skip
        assert patched.returncode == 0, patched.stderr
        wait(lambda: len(cluster_files(published(cluster) or {"status": {
            "nodeDisruptionPolicyStatus": {"clusterPolicies": {"files": []}}}}))
             == len(DEFAULT_POLICIES.files) + 1, 60, "the policy published", ctl.log)  # fmt: skip
        assert cluster_files(published(cluster))[-1] == POLICY["files"][0]
        after, text = plan_pool(cluster)
        (row,) = after["nodes"]
        assert after["policySource"] == SOURCE
        assert (row["node"], row["current"], row["action"]) == (node.name, first, "update")
        assert (row["cost"], row["drain"], row["reboot"]) == ("restart", False, False)
        assert f"Policies: {SOURCE}" in text.splitlines()
        # the rollout: Done on the new config, no drain, no reboot
        patch_pool(cluster, "worker", {"spec": {"paused": False}})
        node.wait_state("Done", second, timeout=90)
        wait(lambda: pool_condition(cluster, "worker", "Updated").get("status") == "True",
             60, "worker Updated", ctl.log, node.log)  # fmt: skip
    finally:
        assert ctl.stop() == 0, ctl.log()[-3000:]
    assert node.reboots_requested() == 0
    assert node.path("/etc/app/app.conf").read_text() == "threads=8\n"
    # never asked to drain for it (an uncordon at the end, as upstream's completeUpdate)
    assert node.annotations().get(Annotation.DESIRED_DRAIN) in (None, f"uncordon-{second}")
    assert not node.events("Cordon") and not node.events("Drain")
    assert "Drain not required for this update" in node.log()
    (restarted,) = node.wait_events("ServiceRestart")  # upstream's Event: the policy's action
    assert restarted["message"] == (
        "Config changes do not require reboot. Service app.service was restarted."
    )
