"""One agent per node (issue 21): a second agent for the same node waits on the node's
Lease, saying so in one line; it takes over when the first stops. An agent that cannot
listen on its metrics address says so in one line, never with a traceback."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

import pytest

from mcd.cluster.api import USER_AGENT
from tests.e2e.configs import KEY_B, worker
from tests.e2e.conftest import NodeFactory
from tests.e2e.harness import AgentNode, create_config
from tests.e2e.scenarios import boot_on
from tests.fakes.apiserver import FakeApiServer
from tests.fakes.kubecluster import TestCluster

WAITING = "is managed by another agent on this host (pid "


def second_agent(node: AgentNode, log: Path, port: int | None = None) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(node.command(port), stdout=out,
                                stderr=subprocess.STDOUT, env=node.env())  # fmt: skip


def namespace_of(cluster: TestCluster) -> str:
    """Where the agents keep their Leases: their POD_NAMESPACE, else ``default``."""
    return cluster.pod_namespace or "default"


def lease_of(cluster: TestCluster, node: str) -> dict[str, object]:
    namespace = namespace_of(cluster)
    lease = cluster.kube.request(
        "GET", f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{node}"
    )
    return dict(lease["spec"])


def test_a_second_agent_waits_then_takes_over_when_the_first_stops(
    make_node: NodeFactory, kube_cluster: TestCluster, tmp_path: Path
) -> None:
    node = make_node()
    name = boot_on(node, kube_cluster)
    first = lease_of(kube_cluster, node.name)["holderIdentity"]
    log = tmp_path / "second.log"
    second = second_agent(node, log)
    try:
        node.wait_for(lambda: WAITING in log.read_text(), 20, "the second agent waiting")
        time.sleep(2)
        text = log.read_text()
        assert text.count(WAITING) == 1  # one line, said once
        assert f"(mcd start --node-name {node.name}) since " in text
        assert "Starting to manage node" not in text and "Traceback" not in text
        assert second.poll() is None
        assert node.stop() == 0  # the first agent releases the Lease on its way out
        node.wait_for(lambda: "Starting to manage node" in log.read_text(), 20, "take-over")
        assert lease_of(kube_cluster, node.name)["holderIdentity"] != first
        new = kube_cluster.name("rendered-worker-2")
        create_config(kube_cluster, worker(new, key=KEY_B))
        node.set_desired(new)  # the second agent now does the work
        node.wait_state("Done", new)
        assert "Traceback" not in log.read_text()
    finally:
        second.terminate()
        second.wait(30)
    assert second.returncode == 0
    assert name


def test_an_agent_killed_is_replaced_at_once_not_after_the_lease_expires(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    node = make_node()
    boot_on(node, kube_cluster)
    first = lease_of(kube_cluster, node.name)["holderIdentity"]
    node.kill()  # no release: the Lease still names the dead agent
    node.start()
    # The Lease lasts 600 s (the default): ready within two minutes, even on a loaded
    # machine, means it was taken over, not waited out.
    node.wait_ready(timeout=120)
    assert lease_of(kube_cluster, node.name)["holderIdentity"] != first
    assert f"Taking Lease {namespace_of(kube_cluster)}/{node.name} over from {first}" in node.log()


def test_the_lease_is_renewed_while_the_agent_runs(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    node = make_node(extra_args=("--lease-duration", "3"))
    boot_on(node, kube_cluster)
    before = lease_of(kube_cluster, node.name)
    assert before["leaseDurationSeconds"] == 3
    node.wait_for(
        lambda: lease_of(kube_cluster, node.name)["renewTime"] != before["renewTime"], 10,
        "a renewal",
    )  # fmt: skip
    after = lease_of(kube_cluster, node.name)
    assert after["holderIdentity"] == before["holderIdentity"]
    assert after["acquireTime"] == before["acquireTime"]
    assert node.running


def test_metrics_address_in_use_is_one_line_and_exit_1(
    make_node: NodeFactory, kube_cluster: TestCluster, tmp_path: Path
) -> None:
    node = make_node()
    boot_on(node, kube_cluster)
    node.stop()
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        log = tmp_path / "busy.log"
        agent = second_agent(node, log, port)
        assert agent.wait(60) == 1
    text = log.read_text()
    assert "Traceback" not in text
    assert f"cannot listen on 127.0.0.1:{port} for /metrics, /healthz and /readyz: " in text


@pytest.mark.fake_only("answers 403 to every Lease request (manifests from before the Lease)")
def test_without_the_lease_role_the_agent_says_so_and_still_works(
    make_node: NodeFactory, kube_cluster: TestCluster, fake_api: FakeApiServer
) -> None:
    """Manifests from before the Lease (no Role): 403 on every Lease request."""
    fake_api.fail_next(10_000, 403, lambda _m, p: "/leases" in p, USER_AGENT)
    node = make_node()
    boot_on(node, kube_cluster)
    assert node.log().count("Cannot use Lease default/") == 1
    assert "Traceback" not in node.log()
