"""Try mode for the agent (issue 19): the Node annotation ``mcd-project.github.io/try`` makes
the next rebootless update a try, reverted at its deadline (the agent wakes for it, also
after a restart) unless the annotation says ``confirmed``."""

from __future__ import annotations

import json
import time

from mcd.agent.safety.trymode import TRY_STATE
from mcd.model.node.health import TRY_ANNOTATION
from mcd.model.vocabulary import Annotation
from tests.builders import file_entry
from tests.e2e.configs import worker
from tests.e2e.conftest import NodeFactory
from tests.e2e.harness import AgentNode, create_config
from tests.fakes.kubecluster import TestCluster

POLICY = "/etc/containers/policy.json"  # the default policy: a crio reload, no reboot
CRIO = "[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n"


def started(
    make_node: NodeFactory, cluster: TestCluster, resync: str = "1"
) -> tuple[AgentNode, str]:
    node = make_node(fake_systemd=True, extra_args=("--resync-interval", resync))
    crio = node.path("/usr/lib/systemd/system/crio.service")  # a vendor unit, as on RHCOS
    crio.parent.mkdir(parents=True, exist_ok=True)
    crio.write_text(CRIO)
    old = cluster.name("rendered-worker-1")
    doc = worker(old, extra_files=[file_entry(POLICY, "one\n")])
    create_config(cluster, doc)
    node.provision(doc)
    cluster.annotate(node.name, {Annotation.CURRENT_CONFIG: old, Annotation.DESIRED_CONFIG: old,
                                 Annotation.STATE: "Done"})  # fmt: skip
    node.start()
    node.wait_ready()
    node.wait_state("Done", old)
    return node, old


def try_update(node: AgentNode, cluster: TestCluster, duration: str) -> str:
    new = cluster.name("rendered-worker-2")
    create_config(cluster, worker(new, extra_files=[file_entry(POLICY, "two\n")]))
    cluster.annotate(node.name, {TRY_ANNOTATION: duration})
    node.set_desired(new)
    node.wait_state("Done", new, timeout=60)
    assert node.path(POLICY).read_text() == "two\n"
    return new


def test_an_unconfirmed_try_is_reverted_after_its_deadline(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    node, old = started(make_node, kube_cluster)
    new = try_update(node, kube_cluster, "3s")
    node.wait_state("Degraded", timeout=60)
    assert node.reason() == f"try of {new} not confirmed in time; reverted to {old}"
    assert node.annotations()[Annotation.CURRENT_CONFIG] == old
    assert node.current_on_disk() == old
    assert node.path(POLICY).read_text() == "one\n"
    node.wait_events("TryReverted")
    assert not node.path(TRY_STATE).exists()
    time.sleep(3)  # resyncs every second: the try is not applied again
    assert node.path(POLICY).read_text() == "one\n"
    assert node.state() == "Degraded" and node.current_on_disk() == old


def test_a_confirmed_try_stays(make_node: NodeFactory, kube_cluster: TestCluster) -> None:
    node, _ = started(make_node, kube_cluster)
    new = try_update(node, kube_cluster, "6s")
    assert node.path(TRY_STATE).exists()
    kube_cluster.annotate(node.name, {TRY_ANNOTATION: "confirmed"})
    node.wait_for(lambda: not node.path(TRY_STATE).exists(), 30, "the try confirmed")
    time.sleep(7)  # past the deadline
    assert node.state() == "Done" and node.current_on_disk() == new
    assert node.path(POLICY).read_text() == "two\n"
    assert not node.events("TryReverted")


def deadline_of(node: AgentNode) -> float:
    return float(json.loads(node.path(TRY_STATE).read_text())["deadline"])


def reverted(node: AgentNode, old: str) -> bool:
    return node.state() == "Degraded" and node.current_on_disk() == old


# Slack for a loaded machine only: without a wake-up at the deadline, the revert would wait
# for the next resync (an hour here) and never come within it.
SLACK = 30.0


def test_the_revert_lands_at_the_deadline_not_at_the_next_resync(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    node, old = started(make_node, kube_cluster, resync="3600")
    new = try_update(node, kube_cluster, "4s")
    deadline = deadline_of(node)
    node.wait_for(lambda: reverted(node, old), deadline - time.time() + SLACK, "the revert")
    assert time.time() <= deadline + SLACK
    assert node.path(POLICY).read_text() == "one\n"
    assert node.reason() == f"try of {new} not confirmed in time; reverted to {old}"
    node.wait_events("TryReverted")


def test_an_agent_started_again_wakes_at_the_kept_deadline(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    node, old = started(make_node, kube_cluster, resync="3600")
    try_update(node, kube_cluster, "8s")
    deadline = deadline_of(node)
    assert node.stop() == 0
    assert node.path(POLICY).read_text() == "two\n"  # nothing reverted by stopping
    node.start()
    node.wait_ready()
    node.wait_for(lambda: reverted(node, old), deadline - time.time() + SLACK, "the revert")
    assert time.time() <= deadline + SLACK
    assert node.path(POLICY).read_text() == "one\n"
    assert not node.path(TRY_STATE).exists()
