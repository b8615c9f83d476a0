"""What an update reads from the cluster: MachineConfiguration/cluster once (the node
disruption policies and the irreconcilable overrides both come from that read) and the
node's pool once (the health gate's and the soft reboot's settings)."""

from __future__ import annotations

import pytest

from mcd.cluster.api import USER_AGENT
from mcd.cluster.policies import MACHINECONFIGURATION
from mcd.cluster.pools import POOLS
from tests.e2e.configs import KEY_B, worker
from tests.e2e.conftest import NodeFactory
from tests.e2e.harness import create_config
from tests.e2e.scenarios import boot_on
from tests.fakes.apiserver import FakeApiServer
from tests.fakes.kubecluster import TestCluster


@pytest.mark.fake_only("counts the agent's requests in the server's request log")
def test_a_rebootless_update_reads_the_cluster_configuration_and_the_pool_once(
    make_node: NodeFactory, kube_cluster: TestCluster, fake_api: FakeApiServer
) -> None:
    node = make_node()
    boot_on(node, kube_cluster)
    before = len(fake_api.requests)
    target = kube_cluster.name("rendered-worker-2")
    create_config(kube_cluster, worker(target, key=KEY_B))  # an SSH key: no drain, no reboot
    node.set_desired(target)
    node.wait_state("Done", target)

    reads = [
        r.path
        for r in fake_api.requests[before:]
        if r.user_agent.startswith(USER_AGENT) and r.method == "GET" and not r.watch
    ]
    assert reads.count(MACHINECONFIGURATION) == 1, reads
    assert reads.count(f"{POOLS}/worker") == 1, reads
    assert KEY_B in node.path("/home/core/.ssh/authorized_keys.d/ignition").read_text()
    assert node.reboots_requested() == 0
