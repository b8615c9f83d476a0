"""A kubelet restart deferred by a service-CA rotation (issue 16): upstream's
``deferKubeletRestart`` (``syncControllerConfigHandler``) and ``kubeletRebootstrap`` (``Run``).

A rotation that only adds a signer upstream lets rotate by itself restarts nothing and is
remembered; an error mentioning x509 later removes ``/var/lib/kubelet/kubeconfig``, restarts the
kubelet, waits for the kubelet's new kubeconfig and exits 255 (``ErrAuxiliary``). A SIGTERM
(upstream's ``signaled``) rebootstraps nothing. Fake API server only: the x509 error is an
injected fault."""

from __future__ import annotations

import base64
import signal
from pathlib import Path

import pytest

from mcd.agent.boot.rebootstrap import STATE_FILE
from mcd.cluster.api import USER_AGENT
from mcd.model.certificates.serviceca import LAST_OBSERVED_SERVER_CA
from tests.e2e.conftest import NodeFactory
from tests.e2e.harness import AgentNode
from tests.e2e.scenarios import boot_on
from tests.e2e.test_service_ca import (
    CC_PATH,
    CM_PATH,
    LB,
    NEW,
    OLD,
    ca_of,
    kubeconfig,
    openshift,  # noqa: F401 (fixture)
    rotating_controller_config,
)
from tests.fakes.kubecluster import TestCluster

X509 = (
    'Get "https://api-int.example.com:6443/api/v1/nodes": tls: failed to verify certificate: '
    "x509: certificate signed by unknown authority"
)


def restart_jobs(node: AgentNode) -> list[str]:
    return [
        c["member"] for c in node.bus.calls("StopUnit", "StartUnit", "RestartUnit")
        if "kubelet.service" in str(c)
    ]  # fmt: skip


pytestmark = pytest.mark.fake_only(
    "the x509 error is a fault injected into the fake API server (a 500 on the agent's LIST)"
)


@pytest.fixture
def deferred(
    make_node: NodeFactory,
    kube_cluster: TestCluster,
    openshift: None,  # noqa: F811
) -> tuple[AgentNode, Path]:
    """A node (on the D-Bus test service: its calls are read) whose kubelet restart was
    deferred: the bundle adds only the lb signer; and the kubelet's kubeconfig."""
    node = make_node(fake_systemd=True)
    node.path("/etc/kubernetes").mkdir(parents=True)
    node.path("/var/lib/kubelet").mkdir(parents=True)
    node.path("/etc/systemd/system").mkdir(parents=True, exist_ok=True)
    node.path("/etc/systemd/system/kubelet.service").write_text("[Service]\nExecStart=/bin/true\n")
    node.path("/etc/kubernetes/kubeconfig").write_text(kubeconfig(OLD + NEW, {"token": "t"}))
    kubelet_kc = node.path("/var/lib/kubelet/kubeconfig")
    kubelet_kc.write_text(kubeconfig(OLD + NEW, {"client-certificate": "/var/lib/kubelet/c.pem"}))
    boot_on(node, kube_cluster)
    kube_cluster.create(CM_PATH, {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kubeconfig-data"},
        "binaryData": {"ca-bundle.crt": base64.b64encode(OLD + NEW + LB).decode()}})  # fmt: skip
    kube_cluster.create(CC_PATH, rotating_controller_config())
    node.wait_for(lambda: node.annotations().get(LAST_OBSERVED_SERVER_CA) == "true", 15,
                  "lastObservedServerCAAnnotation")  # fmt: skip
    assert ca_of(node.path("/etc/kubernetes/kubeconfig")).strip() == (OLD + NEW + LB).strip()
    assert '"Skipping kubelet restart"' in node.log()
    assert restart_jobs(node) == []
    state = node.path(STATE_FILE)
    assert state.exists() and state.stat().st_mode & 0o777 == 0o600
    return node, kubelet_kc


def node_watch_fails(cluster: TestCluster, message: str) -> None:
    """The node watch is cut; when it comes back, the agent's next list of Nodes meets a 500
    saying ``message``."""
    fake = cluster.fake
    assert fake is not None
    fake.fail_next(
        1, 500, lambda m, p: m == "GET" and p == "/api/v1/nodes", USER_AGENT, message=message
    )
    fake.drop_watches()


def test_an_x509_error_after_a_deferred_restart_rebootstraps_the_kubelet_and_exits_255(
    deferred: tuple[AgentNode, Path], kube_cluster: TestCluster
) -> None:
    node, kubelet_kc = deferred
    node_watch_fails(kube_cluster, X509)
    node.wait_for(lambda: "RestartUnit" in restart_jobs(node), 20, "the kubelet restarted")
    assert not kubelet_kc.exists()  # removed before the restart: the kubelet bootstraps anew
    assert node.running  # upstream waits for the kubelet's new kubeconfig
    kubelet_kc.write_text(kubeconfig(OLD + NEW + LB, {"client-certificate": "/new.pem"}))
    assert node.proc is not None
    assert node.proc.wait(30) == 255  # upstream's ErrAuxiliary: os.Exit(255)
    assert restart_jobs(node) == ["RestartUnit"]
    assert not node.path(STATE_FILE).exists()  # done: nothing deferred any more
    assert kubelet_kc.exists()  # the kubelet's file, left as the kubelet wrote it
    log = node.log()
    assert (
        '"Re-bootstrapping kubelet in response to deferred kubeconfig changes and 500 '
        "InternalError: " + X509 + '"' in log
    )
    assert node.reboots_requested() == 0


def test_a_sigterm_leaves_the_deferred_restart_for_later_and_other_errors_change_nothing(
    deferred: tuple[AgentNode, Path], kube_cluster: TestCluster
) -> None:
    node, kubelet_kc = deferred
    node_watch_fails(kube_cluster, "injected fault")
    node.wait_for(lambda: "injected fault" in node.log(), 20, "the watch error")
    assert node.running and restart_jobs(node) == []  # no x509: upstream only logs it
    assert node.stop(signal.SIGTERM) == 0
    assert restart_jobs(node) == []  # upstream's signaled path returns without rebootstrap
    assert kubelet_kc.exists()
    assert node.path(STATE_FILE).exists()  # kept for the agent's next run (upstream forgets)
