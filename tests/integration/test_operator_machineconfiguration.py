"""``mcd controller``'s part of upstream's operator (``syncMachineConfiguration``) against the API
server: MachineConfiguration/cluster created when missing, its policies published on each spec
change, a spec the CRD's rules refuse not published (Degraded says why), and nothing written
where upstream's machine-config-operator runs."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from mcd.cluster.api import ApiError
from mcd.cluster.policies import MACHINECONFIGURATION, SOURCE, cluster_policies
from mcd.controller.operator.machineconfiguration import MachineConfigurationSync
from mcd.model.disruption.policy import DEFAULT_POLICIES, restart
from tests.e2e.test_mcn_degraded import MACHINE_CONFIGURATIONS, MC_CRD
from tests.fakes.kubecluster import TestCluster, eventually
from tests.fakes.realcluster import install_crd

Obj = dict[str, Any]
CHRONY = {"files": [{"path": "/etc/chrony.conf", "actions": [
    {"type": "Restart", "restart": {"serviceName": "chronyd.service"}}]}]}  # fmt: skip


@pytest.fixture
def running(kube_cluster: TestCluster) -> Iterator[MachineConfigurationSync]:
    if kube_cluster.fake is None:
        install_crd(kube_cluster.kube, yaml.safe_load(MC_CRD.read_text()), MACHINE_CONFIGURATIONS)
    sync = MachineConfigurationSync(kube_cluster.kube, "v9", resync=0.2)
    stop = threading.Event()
    thread = threading.Thread(target=sync.run, args=(stop,), daemon=True)
    thread.start()
    try:
        yield sync
    finally:
        stop.set()
        sync.wake.set()
        thread.join(10)


def current(cluster: TestCluster) -> Obj:
    try:
        return cluster.kube.request("GET", MACHINECONFIGURATION)
    except ApiError:
        return {}


def published(cluster: TestCluster) -> bool:
    obj = current(cluster)
    status = obj.get("status") or {}
    return bool(obj) and status.get("observedGeneration") == obj["metadata"].get("generation")


def edit(cluster: TestCluster, policy: Obj) -> None:
    cluster.kube.request(
        "PATCH", MACHINECONFIGURATION, body={"spec": {"nodeDisruptionPolicy": policy}},
        content_type="application/merge-patch+json",
    )  # fmt: skip


def test_created_then_each_spec_published(
    kube_cluster: TestCluster, running: MachineConfigurationSync
) -> None:
    assert eventually(lambda: published(kube_cluster), 30), current(kube_cluster)
    assert current(kube_cluster)["spec"]["managementState"] == "Managed"
    assert cluster_policies(kube_cluster.kube, timeout=0).files == DEFAULT_POLICIES.files
    generation = current(kube_cluster)["metadata"]["generation"]
    edit(kube_cluster, CHRONY)
    assert eventually(
        lambda: published(kube_cluster)
        and current(kube_cluster)["metadata"]["generation"] > generation, 30
    ), current(kube_cluster)  # fmt: skip
    policies = cluster_policies(kube_cluster.kube, timeout=0)
    assert policies.source == SOURCE
    chrony = policies.closest_file_policy("/etc/chrony.conf")
    assert chrony is not None and chrony.actions == (restart("chronyd.service"),)


@pytest.mark.fake_only("a real kube-apiserver runs the CRD's rules: it refuses this spec itself")
def test_a_spec_the_crd_refuses_is_not_published(
    kube_cluster: TestCluster, running: MachineConfigurationSync
) -> None:
    assert eventually(lambda: published(kube_cluster), 30)
    before = current(kube_cluster)["status"]["nodeDisruptionPolicyStatus"]
    edit(kube_cluster, {"files": [{"path": "/etc/x", "actions": [
        {"type": "Reboot"}, {"type": "Drain"}]}]})  # fmt: skip

    def degraded() -> Obj:
        found = [c for c in (current(kube_cluster).get("status") or {}).get("conditions") or []
                 if c["type"] == "Degraded"]  # fmt: skip
        return found[0] if found else {}

    assert eventually(lambda: degraded().get("status") == "True", 30), current(kube_cluster)
    assert degraded()["reason"] == "MachineConfigurationFailed"
    assert degraded()["message"] == (
        "Failed to resync v9 because: spec.nodeDisruptionPolicy.files[0].actions: "
        "Reboot action can only be specified standalone"
    )
    assert current(kube_cluster)["status"]["nodeDisruptionPolicyStatus"] == before
    assert not published(kube_cluster)  # the agents wait, as for an operator behind
    edit(kube_cluster, CHRONY)
    assert eventually(lambda: published(kube_cluster), 30)
    assert degraded()["status"] == "False" and degraded()["reason"] == "AsExpected"


@pytest.mark.fake_only("creates upstream's namespace and Deployment")
def test_nothing_written_where_upstreams_operator_runs(
    kube_cluster: TestCluster, caplog: pytest.LogCaptureFixture
) -> None:
    kube_cluster.kube.request("POST", "/api/v1/namespaces", body={
        "metadata": {"name": "openshift-machine-config-operator"}})  # fmt: skip
    kube_cluster.create(
        "/apis/apps/v1/namespaces/openshift-machine-config-operator/deployments",
        {"metadata": {"name": "machine-config-operator"}, "spec": {"replicas": 1}},
    )
    sync = MachineConfigurationSync(kube_cluster.kube, "v9", resync=0.2)
    stop = threading.Event()
    thread = threading.Thread(target=sync.run, args=(stop,), daemon=True)
    with caplog.at_level(logging.WARNING):
        thread.start()
        try:
            assert eventually(lambda: bool(sync.upstream), 30)
            assert not eventually(lambda: bool(current(kube_cluster)), 1.0)
        finally:
            stop.set()
            sync.wake.set()
            thread.join(10)
    assert (
        "Upstream's machine-config-operator runs on this cluster (its Deployment "
        "openshift-machine-config-operator/machine-config-operator has 1 replica(s)): it "
        "publishes MachineConfiguration/cluster status, mcd's controller does not"
    ) in caplog.text
