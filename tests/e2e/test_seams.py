"""``mcd start`` where it meets the rest of the Machine Config Operator (issue 16)."""

from __future__ import annotations

import json

import pytest

from mcd.model.vocabulary import Annotation
from tests.e2e.configs import worker
from tests.e2e.conftest import NodeFactory
from tests.e2e.harness import IMAGE_A, IMAGE_B, create_config
from tests.e2e.test_agent import boot_on
from tests.fakes import rpm_ostree
from tests.fakes.kubecluster import TestCluster
from tests.unit.test_policy_status import status_object


def test_single_node_cluster_reboots_without_draining(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    """Upstream drainRequired: controlPlaneTopology SingleReplica never drains."""
    node = make_node()
    kube_cluster.annotate(node.name, {Annotation.CONTROL_PLANE_TOPOLOGY: "SingleReplica"})
    boot_on(node, kube_cluster)
    ns = kube_cluster.namespace()
    kube_cluster.pod(ns, "web-0", node.name)
    new = kube_cluster.name("rendered-worker-2")
    create_config(kube_cluster, worker(new, app="threads=8\n"))
    node.set_desired(new)
    node.wait_reboot()
    assert not node.node().get("spec", {}).get("unschedulable")
    assert "web-0" in kube_cluster.pods_on(node.name)  # nothing evicted
    assert [e["message"] for e in node.events("Drain")] == ["Drain not required, skipping"]
    assert not node.events("Cordon")
    node.reboot()
    node.wait_state("Done", new)


def test_booting_the_old_deployment_again_and_again_degrades_with_upstreams_reason(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    node = make_node()
    old = boot_on(node, kube_cluster)
    new = kube_cluster.name("rendered-worker-2")
    create_config(kube_cluster, worker(new, image=IMAGE_B))
    node.set_desired(new)
    for attempt in range(1, 5):  # the first boot and MAX_RETRIES (3) retries
        node.wait_reboot(count=attempt)
        state = node.rpm()  # ostree-finalize-staged fails every time
        state["deployments"] = [d for d in state["deployments"] if not d["staged"]]
        rpm_ostree.save(node.rpm_state, state)
        node.reboot(boot_staged=False)
    node.wait_state("Degraded")
    assert node.reason() == (
        f"unexpected on-disk state validating against {new}: "
        f'expected target osImageURL "{IMAGE_B}", have "{IMAGE_A}"'
    )
    assert node.events("OnDiskStateValidationFailed")
    assert node.reboots_requested() == 4
    assert node.current_on_disk() == old
    node.set_desired(old)  # the admin goes back: the node recovers by itself
    node.wait_state("Done", old)


def test_policy_from_the_cluster_makes_a_file_change_rebootless(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    """calculatePostConfigChangeNodeDisruptionAction reads MachineConfiguration/cluster."""
    if kube_cluster.fake is None:
        pytest.skip("MachineConfiguration/cluster is a singleton: fake API server only")
    user = {"files": [{"path": "/etc/app", "actions": [
        {"type": "Restart", "restart": {"serviceName": "app.service"}}]}]}  # fmt: skip
    kube_cluster.create(
        "/apis/operator.openshift.io/v1/machineconfigurations",
        status_object(user, generation=1, observed=1),
    )
    node = make_node()
    boot_on(node, kube_cluster)
    new = kube_cluster.name("rendered-worker-2")
    create_config(kube_cluster, worker(new, app="threads=8\n"))
    node.set_desired(new)
    node.wait_state("Done", new)
    assert node.path("/etc/app/app.conf").read_text() == "threads=8\n"
    assert node.reboots_requested() == 0
    assert not node.events("Drain") and not node.events("Reboot")
    restarts = [c for c in node.bus.calls("RestartUnit") if "app.service" in json.dumps(c)]
    assert restarts, node.bus.calls()
    assert "Node disruption policies from MachineConfiguration/cluster" in node.log()
