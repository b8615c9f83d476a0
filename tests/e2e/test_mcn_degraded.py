"""The MachineConfigNode's NodeDegraded and UpdatePostActionComplete conditions as upstream sets
them (``reportMachineNodeDegradeStatus`` from ``update()`` and ``updateDegradedState``;
``performPostConfigChangeNodeDisruptionAction``)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from mcd.cluster.api import ApiError
from tests.e2e.configs import KEY_B, worker
from tests.e2e.conftest import NodeFactory
from tests.e2e.harness import AgentNode, create_config
from tests.e2e.scenarios import boot_on
from tests.e2e.test_machineconfignode import MCN, record_status_writes
from tests.e2e.test_service_ca import (
    complete_controller_config,
    openshift,  # noqa: F401 (fixture)
)
from tests.fakes.kubecluster import TestCluster
from tests.fakes.realcluster import install_crd
from tests.unit.test_policy_status import status_object

Obj = dict[str, Any]
MC_CRD = (
    Path(__file__).resolve().parents[2] / "daemonset/kubernetes/12-machineconfiguration-crd.yaml"
)
MACHINE_CONFIGURATIONS = "/apis/operator.openshift.io/v1/machineconfigurations"


def conditions(cluster: TestCluster, node: AgentNode) -> dict[str, Obj]:
    mcn = cluster.kube.request("GET", f"{MCN}/{node.name}")
    return {c["type"]: c for c in mcn["status"]["conditions"]}


def wait_condition(
    cluster: TestCluster, node: AgentNode, kind: str, status: str, what: str, message: str = ""
) -> dict[str, Obj]:
    """The conditions once ``kind`` has ``status`` (and ``message``, when given: the agent's
    MachineConfigNode writes land one after another, so a reader may see the status first)."""

    def reached() -> bool:
        got = conditions(cluster, node)[kind]
        return bool(got["status"] == status and (not message or got["message"] == message))

    node.wait_for(reached, 15, what)
    return conditions(cluster, node)


def test_node_degraded_follows_a_failed_update_and_its_recovery(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    """Also on a real kube-apiserver: the session installs daemonset/kubernetes/08's MachineConfigNode
    CRD, so the conditions pass its schema and the agent's ClusterRole."""
    node = make_node()
    boot_on(node, kube_cluster)
    missing = kube_cluster.name("rendered-worker-2")
    node.set_desired(missing)  # no such MachineConfig yet: Degraded
    node.wait_state("Degraded")
    reason = node.reason()
    got = wait_condition(kube_cluster, node, "NodeDegraded", "True", "NodeDegraded True")
    assert got["NodeDegraded"]["reason"] == "NodeDegraded"
    assert got["NodeDegraded"]["message"] == f"Node {node.name} upgrade failure. {reason}"
    assert got["Updated"]["status"] == "False"
    create_config(kube_cluster, worker(missing, key=KEY_B))  # an SSH key: rebootless
    node.wait_state("Done", missing)
    succeeded = f"Node {node.name} upgrade succeeded"
    got = wait_condition(
        kube_cluster, node, "NodeDegraded", "False", "NodeDegraded False", succeeded
    )
    assert got["NodeDegraded"]["message"] == succeeded
    assert got["Updated"]["status"] == "True"
    # upstream's None action: reason None, then set back by Updated like every phase
    post = got["UpdatePostActionComplete"]
    assert (post["status"], post["reason"]) == ("False", "None")
    assert post["message"] == f"Action during update to {missing}: Changes do not require a reboot"

    # drift: Degraded (updateDegradedState reports it too); undone: Done, NodeDegraded False
    app = node.path("/etc/app/app.conf")
    good = app.read_text()
    app.write_text("drifted\n")
    node.wait_state("Degraded")
    got = wait_condition(kube_cluster, node, "NodeDegraded", "True", "NodeDegraded on drift")
    assert got["NodeDegraded"]["message"] == f"Node {node.name} upgrade failure. {node.reason()}"
    app.write_text(good)  # the retry finds the node well again: Done without an update
    node.wait_for(lambda: node.state() == "Done" and not node.reason(), 20, "Done again")
    got = wait_condition(kube_cluster, node, "NodeDegraded", "False", "recovered")
    assert got["Updated"]["status"] == "True"
    assert node.reboots_requested() == 0


@pytest.fixture
def machine_configuration(kube_cluster: TestCluster) -> Iterator[None]:
    """On a real kube-apiserver: upstream's MachineConfiguration CRD (Established and served),
    left installed as the other tests of that CRD leave it: deleting a CRD takes the API
    server's finalizer, and a test applying it meanwhile would wait on a terminating copy."""
    if kube_cluster.fake is not None:
        yield
        return
    install_crd(kube_cluster.kube, yaml.safe_load(MC_CRD.read_text()), MACHINE_CONFIGURATIONS)
    try:
        yield
    finally:
        with contextlib.suppress(ApiError):
            kube_cluster.kube.request("DELETE", f"{MACHINE_CONFIGURATIONS}/cluster")


def create_machine_configuration(cluster: TestCluster, obj: Obj) -> None:
    """As the operator: the object, then its status (a subresource on a real API server)."""
    created = cluster.create(MACHINE_CONFIGURATIONS, obj)
    if cluster.fake is None:
        created["status"] = obj["status"]
        cluster.kube.request("PUT", f"{MACHINE_CONFIGURATIONS}/cluster/status", body=created)


@pytest.mark.fake_too("the count of status writes, from the fake's request log")
def test_reload_policy_reports_the_reloaded_service(
    make_node: NodeFactory, kube_cluster: TestCluster, machine_configuration: None
) -> None:
    """Also on a real kube-apiserver, with upstream's MachineConfiguration CRD and daemonset/kubernetes/08's
    MachineConfigNode CRD; the count of status writes is checked on the fake only."""
    user = {"files": [{"path": "/etc/app", "actions": [
        {"type": "Reload", "reload": {"serviceName": "app.service"}}]}]}  # fmt: skip
    create_machine_configuration(kube_cluster, status_object(user, generation=1, observed=1))
    node = make_node(fake_systemd=True)
    boot_on(node, kube_cluster)
    fake = kube_cluster.fake
    writes = record_status_writes(fake, node.name) if fake is not None else []
    new = kube_cluster.name("rendered-worker-2")
    create_config(kube_cluster, worker(new, app="threads=8\n"))
    node.set_desired(new)
    node.wait_state("Done", new)
    wait_condition(kube_cluster, node, "Updated", "True", "Updated")
    assert node.reboots_requested() == 0
    last = conditions(kube_cluster, node) if fake is None else {
        c["type"]: c for c in writes[-1]["conditions"]}  # fmt: skip
    post = last["UpdatePostActionComplete"]
    assert post["reason"] == "UpdatePostActionComplete"
    assert (
        post["message"] == f"Action during update to {new}: Node has reloaded service app.service"
    )
    assert last["NodeDegraded"]["message"] == f"Node {node.name} upgrade succeeded"
    if fake is not None:  # prepared + executing (no drain: one write); applied + post + updated
        assert len(writes) == 2
        first = {c["type"]: c["status"] for c in writes[0]["conditions"]}
        assert first["UpdatePrepared"] == "True"
        assert first["UpdateExecuted"] == "Unknown"  # upstream: executing


def test_certificate_writer_failure_shows_in_the_machineconfignode(
    make_node: NodeFactory,
    kube_cluster: TestCluster,
    openshift: None,  # noqa: F811
) -> None:
    """Upstream handleControllerConfigErr -> updateErrorState -> updateDegradedState: the
    MachineConfigNode's NodeDegraded carries the certificate writer's error."""
    node = make_node()
    boot_on(node, kube_cluster)
    blocker = node.path("/etc/kubernetes/kubelet-ca.crt")
    blocker.mkdir(parents=True)
    path = "/apis/machineconfiguration.openshift.io/v1/controllerconfigs"
    kube_cluster.create(path, complete_controller_config())
    reason = "cannot write file /etc/kubernetes/kubelet-ca.crt: a directory is in the way"
    got = wait_condition(kube_cluster, node, "NodeDegraded", "True", "NodeDegraded True")
    assert got["NodeDegraded"]["message"] == f"Node {node.name} upgrade failure. {reason}"
    blocker.rmdir()
    obj = kube_cluster.kube.request("GET", f"{path}/machine-config-controller")
    obj["metadata"].setdefault("labels", {})["touched"] = "1"
    kube_cluster.kube.request("PUT", f"{path}/machine-config-controller", body=obj)
    node.wait_state("Done")
    got = wait_condition(kube_cluster, node, "NodeDegraded", "False", "NodeDegraded False")
    assert got["Updated"]["status"] == "True"
