"""A reboot owed until it happens (issue 21): the record on disk survives an agent killed
between the commit and the reboot request, and a reboot request that never happens."""

from __future__ import annotations

import json

from mcd.agent.safety.owed import OWED
from mcd.agent.update.journal import JOURNAL
from mcd.model.vocabulary import Annotation
from tests.e2e.configs import APP_CONF, worker
from tests.e2e.conftest import NodeFactory
from tests.e2e.harness import AgentNode, create_config
from tests.e2e.scenarios import boot_on
from tests.fakes.kubecluster import TestCluster


def reboot_update(node: AgentNode, cluster: TestCluster) -> str:
    new = cluster.name("rendered-worker-2")
    create_config(cluster, worker(new, app="threads=8\n"))
    node.set_desired(new)
    return new


def test_agent_killed_between_commit_and_reboot_request_reboots_after_restart(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    node = make_node()
    old = boot_on(node, kube_cluster)
    node.stop()
    node.start(MCD_CRASH_AT="reboot")  # after the journal says so, before systemd is asked
    node.wait_ready()
    new = reboot_update(node, kube_cluster)
    node.wait_for(lambda: not node.running, 30, "the agent killed before the reboot request")
    # currentconfig is promoted by the health gate after the boot (issue 19): until then the
    # journal keeps the update, awaiting its reboot; no reboot was asked for
    assert node.current_on_disk() == old
    assert json.loads(node.path(JOURNAL).read_text())["phase"] == "awaiting-reboot"
    assert node.reboots_requested() == 0
    owed = json.loads(node.path(OWED).read_text())
    assert owed["config"] == new
    assert owed["bootID"] == node.path("/proc/sys/kernel/random/boot_id").read_text()
    node.start()  # same boot: the reboot is still owed (before: Done with no reboot)
    node.wait_reboot(timeout=30)
    assert node.state() == "Working"
    assert node.annotations()[Annotation.CURRENT_CONFIG] != new
    node.reboot()
    node.wait_state("Done", new)
    assert node.reboots_requested() == 1
    assert not node.path(OWED).exists()


def test_a_reboot_that_never_happens_is_asked_again_then_degraded(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    node = make_node(fake_systemd=True)  # a machine that ignores the reboot request
    boot_on(node, kube_cluster)
    new = reboot_update(node, kube_cluster)
    boot_id = node.path("/proc/sys/kernel/random/boot_id").read_text()
    for requests in (1, 2, 3):  # the machine ignores the request; the agent is restarted
        node.wait_reboot(count=requests, timeout=30)
        assert node.state() == "Working"
        node.stop()
        node.start()
    node.wait_state("Degraded", timeout=30)
    assert node.reason() == (
        f"pending config {new} bootID {boot_id} matches current! Failed to reboot?"
    )
    assert node.reboots_requested() == 3
    assert node.annotations()[Annotation.CURRENT_CONFIG] != new
    node.reboot()  # a real reboot at last
    node.wait_state("Done", new)
    assert node.path(APP_CONF).read_text() == "threads=8\n"
    assert node.reboots_requested() == 3
