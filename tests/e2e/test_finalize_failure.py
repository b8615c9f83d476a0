"""The previous boot's ostree-finalize-staged failure as the possible root cause of a node
found off its config (issue 32; upstream ``validateOnDiskState`` with
``previousFinalizationFailure``)."""

from __future__ import annotations

from mcd.agent.report.startup import FINALIZE_FAILURE
from tests.e2e.configs import APP_CONF, worker
from tests.e2e.conftest import NodeFactory
from tests.e2e.scenarios import install
from tests.fakes.kubecluster import TestCluster


def test_a_node_off_its_config_names_the_failed_finalization_as_possible_root_cause(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    node = make_node(fake_systemd=True)
    failure = "error: Installing kernel: No space left on device"
    name = install(node, kube_cluster, worker(kube_cluster.name("rendered-worker-1")),
                   {FINALIZE_FAILURE: failure})  # fmt: skip
    node.path(APP_CONF).write_text("threads=99\n")  # the node is not on its config
    node.start()
    node.wait_state("Degraded")
    reason = node.reason()
    assert f"validating against {name}" in reason
    assert reason.endswith(f"; possible root cause: {failure}")
