"""Level-triggered sync (issue 21): whatever the Node says, the agent makes it say what the
node is, and a wake-up never decides from a Node older than the agent's own last write."""

from __future__ import annotations

import time

import pytest

from mcd.cluster.api import USER_AGENT
from mcd.model.vocabulary import Annotation
from tests.e2e.configs import APP_CONF
from tests.e2e.conftest import NodeFactory
from tests.e2e.harness import AgentNode
from tests.e2e.scenarios import boot_on
from tests.fakes.apiserver import FakeApiServer
from tests.fakes.kubecluster import TEST_LABEL, TestCluster


def history(node: AgentNode, seconds: float) -> list[tuple[str, str, str]]:
    """(state, currentConfig, reason) as it changes over ``seconds``."""
    seen: list[tuple[str, str, str]] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        a = node.annotations()
        now = (a.get(Annotation.STATE, ""), a.get(Annotation.CURRENT_CONFIG, ""),
               a.get(Annotation.REASON, ""))  # fmt: skip
        if not seen or seen[-1] != now:
            seen.append(now)
        time.sleep(0.05)
    return seen


def test_hand_set_state_and_reason_are_corrected_without_touching_the_disk(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    node = make_node()
    name = boot_on(node, kube_cluster)
    conf = node.path(APP_CONF)
    written = conf.stat().st_mtime_ns
    kube_cluster.annotate(node.name, {Annotation.STATE: "Working"})
    node.wait_state("Done", name, timeout=10)
    kube_cluster.annotate(node.name, {Annotation.REASON: "left over by hand"})
    node.wait_for(lambda: node.reason() == "", 10, "the reason cleared")
    assert node.state() == "Done"
    assert conf.stat().st_mtime_ns == written  # validated, not rewritten
    assert node.reboots_requested() == 0


def test_hand_set_done_on_a_drifted_node_is_not_believed(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    node = make_node()
    name = boot_on(node, kube_cluster)
    node.path(APP_CONF).write_text("hot-fix\n")
    node.wait_state("Degraded", timeout=10)
    kube_cluster.annotate(node.name, {Annotation.STATE: "Done", Annotation.REASON: ""})
    seen = history(node, 3)
    assert seen[-1] == (
        "Degraded",
        name,
        f'unexpected on-disk state validating against {name}: content mismatch for file "{APP_CONF}"',
    ), seen
    assert node.path(APP_CONF).read_text() == "hot-fix\n"


def test_current_config_patched_by_hand_is_corrected(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    node = make_node()
    name = boot_on(node, kube_cluster)
    kube_cluster.annotate(node.name, {Annotation.CURRENT_CONFIG: "rendered-worker-0"})
    node.wait_state("Done", name, timeout=10)
    assert node.annotations()[Annotation.DESIRED_CONFIG] == name
    assert node.reboots_requested() == 0
    assert 'currentConfig "rendered-worker-0" but on disk' in node.log()


def test_a_node_registered_again_gets_its_annotations_back(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    node = make_node()
    name = boot_on(node, kube_cluster)
    uid = node.node()["metadata"]["uid"]
    kube_cluster.kube.request("DELETE", f"/api/v1/nodes/{node.name}")
    kube_cluster.kube.request("POST", "/api/v1/nodes", body={
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": node.name, "labels": dict(TEST_LABEL)},
    })  # fmt: skip
    node.wait_state("Done", name, timeout=15)
    assert node.node()["metadata"]["uid"] != uid
    assert node.running and node.reboots_requested() == 0


@pytest.mark.fake_only("delays the server's watch events by 0.5 s")
def test_drift_restored_at_once_recovers_while_the_watch_lags(
    make_node: NodeFactory, kube_cluster: TestCluster, fake_api: FakeApiServer
) -> None:
    """The wake-up that follows the restore must decide from the agent's own Degraded write,
    not from the lagging watch's older Node (before: Degraded for good)."""
    node = make_node()
    name = boot_on(node, kube_cluster)
    node.wait_for(lambda: "Config Drift Monitor started" in node.log(), 10, "drift monitor")
    conf = node.path(APP_CONF)
    original = conf.read_bytes()
    fake_api.watch_lag = 0.5
    conf.write_text("drifted\n")
    node.wait_state("Degraded", timeout=5)
    conf.write_bytes(original)
    node.wait_state("Done", name, timeout=10)
    fake_api.watch_lag = 0.0
    assert history(node, 2) == [("Done", name, "")]


@pytest.mark.fake_only("cuts the agent's watch and fails its LISTs with 500")
def test_periodic_resync_corrects_a_change_the_watch_never_delivered(
    make_node: NodeFactory, kube_cluster: TestCluster, fake_api: FakeApiServer
) -> None:
    node = make_node(extra_args=("--resync-interval", "1"))
    name = boot_on(node, kube_cluster)
    fake_api.fail_next(10_000, 500, lambda m, p: m == "GET" and p == "/api/v1/nodes", USER_AGENT)
    fake_api.drop_watches()
    time.sleep(0.5)
    kube_cluster.annotate(node.name, {Annotation.STATE: "Working"})
    node.wait_state("Done", name, timeout=10)
    assert "Watch of node" in node.log()  # the watch was down the whole time


@pytest.mark.fake_only("counts the agent's requests in the fake's log")
def test_a_resync_on_a_live_watch_reads_nothing_and_on_a_dead_one_reads_the_node(
    make_node: NodeFactory, kube_cluster: TestCluster, fake_api: FakeApiServer
) -> None:
    """Issue 31: a live watch (events or bookmarks, the stream open) already holds the Node,
    so an idle agent's resync costs no request; once the watch is down it reads the Node."""
    node = make_node(extra_args=("--resync-interval", "1"))
    boot_on(node, kube_cluster)
    path = f"/api/v1/nodes/{node.name}"

    def reads() -> int:
        return sum(1 for r in list(fake_api.requests)
                   if r.method == "GET" and r.path == path and r.user_agent.startswith(USER_AGENT))  # fmt: skip

    before = reads()
    time.sleep(4)  # four resyncs, bookmarks every 2 s
    assert reads() == before
    fake_api.fail_next(10_000, 500, lambda m, p: m == "GET" and p == "/api/v1/nodes", USER_AGENT)
    fake_api.drop_watches()
    node.wait_for(lambda: reads() > before, timeout=10, what="a resync reading the Node")
