"""Node disruption policies read from MachineConfiguration/cluster through the API server
(upstream calculatePostConfigChangeNodeDisruptionAction), and mcd plan --from-cluster."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from mcd.cli import cli
from mcd.cluster.policies import (
    NO_RESOURCE,
    SOURCE,
    PoliciesNotReady,
    cluster_policies,
)
from mcd.model.disruption.policy import DEFAULT_POLICIES, restart
from mcd.model.vocabulary import Annotation
from tests.builders import file_entry, mc_doc
from tests.e2e.test_mcn_degraded import (
    create_machine_configuration,
    machine_configuration,  # noqa: F401 (fixture)
)
from tests.fakes.kubecluster import TestCluster
from tests.unit.test_policy_status import USER, status_object


def test_no_machineconfiguration_means_the_defaults(kube_cluster: TestCluster) -> None:
    policies = cluster_policies(kube_cluster.kube)
    assert policies.files == DEFAULT_POLICIES.files and policies.source == NO_RESOURCE


def test_status_is_read_once_observed(
    kube_cluster: TestCluster,
    machine_configuration: None,  # noqa: F811
) -> None:
    create_machine_configuration(kube_cluster, status_object(USER, generation=1, observed=1))
    policies = cluster_policies(kube_cluster.kube)
    assert policies.source == SOURCE
    chrony = policies.closest_file_policy("/etc/chrony.conf")
    assert chrony is not None and chrony.actions == (restart("chronyd.service"),)


def test_status_behind_the_spec_fails_after_the_poll(
    kube_cluster: TestCluster,
    machine_configuration: None,  # noqa: F811
) -> None:
    create_machine_configuration(kube_cluster, status_object(USER, generation=1, observed=0))
    naps: list[float] = []
    with pytest.raises(PoliciesNotReady) as e:
        cluster_policies(kube_cluster.kube, interval=5.0, timeout=0.0, sleep=naps.append)
    assert str(e.value) == (
        "NodeDisruptionPolicyStatus was not ready: NodeDisruptionPolicyStatus is not up to date"
    )


def test_plan_from_cluster_uses_the_same_source(
    kube_cluster: TestCluster,
    machine_configuration: None,  # noqa: F811
) -> None:
    create_machine_configuration(kube_cluster, status_object(USER, generation=1, observed=1))
    old, new = kube_cluster.name("rendered-a"), kube_cluster.name("rendered-b")
    for name, text in ((old, "pool a\n"), (new, "pool b\n")):
        kube_cluster.create(
            "/apis/machineconfiguration.openshift.io/v1/machineconfigs",
            mc_doc(name, files=[file_entry("/etc/chrony.conf", text)]),
        )
    node = kube_cluster.node("plan", {Annotation.CURRENT_CONFIG: old,
                                      Annotation.DESIRED_CONFIG: new})  # fmt: skip
    runner = CliRunner()
    result = runner.invoke(
        cli, ["plan", "--from-cluster", node, "--kubeconfig", str(kube_cluster.kubeconfig),
              "--json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    plan = json.loads(result.output)
    assert plan["policySource"] == SOURCE
    assert plan["reboot"] is False and plan["actions"] == [
        {"type": "Restart", "service": "chronyd.service"}
    ]
    assert plan["decisions"][0]["rule"] == "user policy for /etc/chrony.conf"
    status = runner.invoke(
        cli, ["status", "--node", node, "--kubeconfig", str(kube_cluster.kubeconfig), "--json"]
    )
    assert status.exit_code == 0, status.output
    assert json.loads(status.output)["plan"]["actions"] == plan["actions"]
    human = runner.invoke(
        cli, ["status", "--node", node, "--kubeconfig", str(kube_cluster.kubeconfig)]
    )
    assert f"node disruption policies: {SOURCE}" in human.output
    missing = runner.invoke(
        cli, ["plan", "--from-cluster", "nope", "--kubeconfig", str(kube_cluster.kubeconfig)]
    )
    assert missing.exit_code == 1 and "cannot plan node nope" in missing.output


def test_plan_from_cluster_takes_the_irreconcilable_overrides(
    kube_cluster: TestCluster,
    machine_configuration: None,  # noqa: F811
) -> None:
    """Issue 32: spec.irreconcilableValidationOverrides, as the agent reads it."""
    old, new = kube_cluster.name("rendered-a"), kube_cluster.name("rendered-b")
    disk = {"disks": [{"device": "/dev/sdb", "wipeTable": True}]}
    for name, storage in ((old, None), (new, disk)):
        kube_cluster.create(
            "/apis/machineconfiguration.openshift.io/v1/machineconfigs",
            mc_doc(name, files=[file_entry("/etc/a", "a\n")], storage=storage),
        )
    node = kube_cluster.node("plan", {Annotation.CURRENT_CONFIG: old,
                                      Annotation.DESIRED_CONFIG: new})  # fmt: skip
    args = ["plan", "--from-cluster", node, "--kubeconfig", str(kube_cluster.kubeconfig)]
    refused = CliRunner().invoke(cli, args)
    assert refused.exit_code == 2 and "ignition disks section contains changes" in refused.output
    allowed = status_object({}, generation=1, observed=1)
    allowed["spec"]["irreconcilableValidationOverrides"] = {"storage": ["Disks"]}
    create_machine_configuration(kube_cluster, allowed)
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
