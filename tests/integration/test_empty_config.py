"""The empty config (``mco-empty-mc``) is in memory, never fetched (issue 40, 1): the commands
that read a node's current config from the cluster plan from it like the agent does."""

from __future__ import annotations

from click.testing import CliRunner

from mcd.cli import cli
from mcd.cluster.configs import MACHINECONFIGS
from mcd.model.vocabulary import EMPTY_CONFIG_NAME, Annotation
from tests.builders import file_entry, mc_doc
from tests.fakes.kubecluster import TestCluster


def test_plan_and_status_of_a_node_on_the_empty_config(kube_cluster: TestCluster) -> None:
    rendered = kube_cluster.name("rendered-worker-1")
    kube_cluster.create(MACHINECONFIGS, mc_doc(rendered, files=[file_entry("/etc/a", "1")]))
    node = kube_cluster.node("empty", {Annotation.CURRENT_CONFIG: EMPTY_CONFIG_NAME,
                                       Annotation.DESIRED_CONFIG: rendered,
                                       Annotation.STATE: "Done"})  # fmt: skip
    kubeconfig = str(kube_cluster.kubeconfig)
    plan = CliRunner().invoke(cli, ["plan", "--from-cluster", node, "--kubeconfig", kubeconfig])
    assert plan.exit_code == 0, plan.output
    assert "not found" not in plan.output
    assert "/etc/a" in plan.output
    status = CliRunner().invoke(
        cli, ["status", "--node", node, "--kubeconfig", kubeconfig, "--events", "0"]
    )
    assert status.exit_code == 0, status.output
    assert f"Pending update:  {EMPTY_CONFIG_NAME} -> {rendered}:" in status.output
    assert "files 1 added" in status.output
