"""The Node Events whose reasons no other test asserted (issue 45), each from the path that
emits it, with upstream's reason, type and text: ``BootResync`` and ``ConfigDriftMonitorStopped``
(an agent that starts behind its desiredConfig: upstream's ``checkStateOnFirstRun``; an update
of a running agent stops the drift monitor before it writes: ``runConfigDriftMonitor``'s
shutdown), ``ServiceReload`` and ``FailedServiceRestart`` (node disruption policies:
``performPostConfigChangeNodeDisruptionAction``), ``FailedToUncordon``
(``--drain-mode controller`` whose uncordon request the controller never confirms)."""

from __future__ import annotations

import threading

from mcd.model.vocabulary import Annotation
from tests.builders import file_entry
from tests.e2e.conftest import NodeFactory
from tests.e2e.harness import AgentNode, Obj
from tests.e2e.scenarios import boot_on, update_to
from tests.e2e.test_mcn_degraded import (
    create_machine_configuration,
    machine_configuration,  # noqa: F401 (fixture)
)
from tests.fakes.kubecluster import TestCluster
from tests.unit.test_policy_status import status_object


def _events(node: AgentNode, reason: str, count: int = 1) -> list[Obj]:
    """``reason``'s Events once ``count`` arrived (they are sent in the background)."""
    return node.wait_events(reason, count, timeout=30)


def test_an_agent_started_behind_its_desired_config_resyncs_as_upstream(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    node = make_node()
    old = boot_on(node, kube_cluster)
    assert node.stop() == 0
    new = update_to(node, kube_cluster, app="threads=8\n")  # while the agent is down
    node.start()
    (resync,) = _events(node, "BootResync")
    assert (resync["type"], resync["message"]) == (
        "Normal", f"Booting node {node.name}, currentConfig {old}, desiredConfig {new}"
    )  # fmt: skip
    node.wait_reboot()
    node.reboot()
    node.wait_state("Done", new, timeout=60)


def test_service_reload_and_failed_service_restart_from_node_disruption_policies(
    make_node: NodeFactory,
    kube_cluster: TestCluster,
    machine_configuration: None,  # noqa: F811
) -> None:
    user = {"files": [
        {"path": "/etc/app", "actions": [{"type": "Reload", "reload": {"serviceName": "app.service"}}]},
        {"path": "/etc/other", "actions": [
            {"type": "Restart", "restart": {"serviceName": "other.service"}}]},
    ]}  # fmt: skip
    create_machine_configuration(kube_cluster, status_object(user, generation=1, observed=1))
    node = make_node(fake_systemd=True)  # a restart job made to fail: the D-Bus test service
    boot_on(node, kube_cluster)
    second = update_to(node, kube_cluster, app="threads=8\n")
    node.wait_state("Done", second)
    stopped = _events(node, "ConfigDriftMonitorStopped")  # the writes start: it stops watching
    assert [(e["type"], e["message"]) for e in stopped] == [
        ("Normal", "Config Drift Monitor stopped")
    ]
    (reloaded,) = _events(node, "ServiceReload")
    assert (reloaded["type"], reloaded["message"]) == (
        "Normal", "Config changes do not require reboot. Service app.service was reloaded."
    )  # fmt: skip

    node.bus.fail_job("other.service")
    update_to(node, kube_cluster, "rendered-worker-3", app="threads=8\n",
              extra_files=[file_entry("/etc/other/other.conf", "on\n")])  # fmt: skip
    node.wait_state("Degraded")
    (failed,) = _events(node, "FailedServiceRestart")
    assert failed["type"] == "Warning"
    assert failed["message"].startswith("Restarting other.service service failed. Error: ")
    assert node.reboots_requested() == 0


def test_an_uncordon_the_controller_never_confirms_is_failed_to_uncordon(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    """The drain controller answers the drain and never the uncordon after the reboot."""
    node = make_node(drain_mode="controller", extra_args=("--drain-timeout", "3"))
    stop = threading.Event()

    uncordons = threading.Event()  # answered until the update starts
    uncordons.set()

    def controller() -> None:
        while not stop.wait(0.05):
            a = node.annotations()
            wanted = a.get(Annotation.DESIRED_DRAIN, "")
            answer = wanted.startswith("drain-") or uncordons.is_set()
            if wanted and answer and a.get(Annotation.LAST_APPLIED_DRAIN) != wanted:
                kube_cluster.annotate(node.name, {Annotation.LAST_APPLIED_DRAIN: wanted})

    answering = threading.Thread(target=controller, daemon=True)
    answering.start()
    try:
        boot_on(node, kube_cluster)
        uncordons.clear()
        update_to(node, kube_cluster, app="threads=8\n")
        node.wait_reboot(timeout=60)
        node.reboot()
        (failed,) = _events(node, "FailedToUncordon")
    finally:
        stop.set()
        answering.join(5)
    assert failed["type"] == "Warning"
    assert failed["message"] == (
        f"failed to uncordon node: {node.name} after 3 seconds. "
        "Please see machine-config-controller logs for more information"
    )
    node.wait_state("Degraded")
    assert "failed to uncordon node" in node.reason()
