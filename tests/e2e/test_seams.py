"""``mcd start`` where it meets the rest of the Machine Config Operator (issue 16)."""

from __future__ import annotations

import json

import pytest

from mcd.agent.boot.bootstrap import INITIAL_ANNOTATIONS, INITIAL_ANNOTATIONS_BAK
from mcd.agent.sync.certsync import LAST_SYNCED
from mcd.model.vocabulary import CURRENT_CONFIG_PATH, Annotation
from tests.builders import file_entry
from tests.e2e.configs import worker
from tests.e2e.conftest import NodeFactory
from tests.e2e.harness import IMAGE_A, IMAGE_B, AgentNode, create_config
from tests.e2e.scenarios import boot_on, update_to
from tests.e2e.test_agent import _tree
from tests.e2e.test_mcn_degraded import (
    create_machine_configuration,
    machine_configuration,  # noqa: F401 (fixture)
)
from tests.e2e.test_service_ca import (
    complete_controller_config,
    openshift,  # noqa: F401 (fixture)
)
from tests.fakes import rpm_ostree
from tests.fakes.kubecluster import TestCluster
from tests.integration.test_certificates import CA_A, CA_B, b64, controller_config
from tests.unit.test_policy_status import status_object


def test_single_node_cluster_reboots_without_draining(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    """Upstream drainRequired: controlPlaneTopology SingleReplica never drains."""
    node = make_node()
    kube_cluster.annotate(node.name, {Annotation.CONTROL_PLANE_TOPOLOGY: "SingleReplica"})
    boot_on(node, kube_cluster)
    ns = kube_cluster.namespace()
    kube_cluster.pod(ns, "web-0", node.name)
    new = update_to(node, kube_cluster, app="threads=8\n")
    node.wait_reboot()
    assert not node.node().get("spec", {}).get("unschedulable")
    assert "web-0" in kube_cluster.pods_on(node.name)  # nothing evicted
    assert _messages(node, "Drain") == ["Drain not required, skipping"]
    assert not node.events("Cordon")
    node.reboot()
    node.wait_state("Done", new)


def test_booting_the_old_deployment_again_and_again_degrades_with_upstreams_reason(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    node = make_node()
    old = boot_on(node, kube_cluster)
    new = update_to(node, kube_cluster, image=IMAGE_B)
    for attempt in range(1, 5):  # the first boot and MAX_RETRIES (3) retries
        node.wait_reboot(count=attempt)
        with rpm_ostree.edit(node.rpm_state) as state:  # ostree-finalize-staged fails each time
            state["deployments"] = [d for d in state["deployments"] if not d["staged"]]
        node.reboot(boot_staged=False)
    node.wait_state("Degraded")
    assert node.reason() == (
        f"unexpected on-disk state validating against {new}: "
        f'expected target osImageURL "{IMAGE_B}", have "{IMAGE_A}"'
    )
    assert _messages(node, "OnDiskStateValidationFailed")
    assert _messages(node, "BootResync", 3)[-3:] == [  # a Normal Event per retry
        f"Node {node.name} booted the previous deployment instead of the one staged for "
        f"{new}; retrying the update ({n} of 3)"
        for n in (1, 2, 3)
    ]
    assert node.reboots_requested() == 4
    assert node.current_on_disk() == old
    node.set_desired(old)  # the admin goes back: the node recovers by itself
    node.wait_state("Done", old)


def test_policy_from_the_cluster_makes_a_file_change_rebootless(
    make_node: NodeFactory,
    kube_cluster: TestCluster,
    machine_configuration: None,  # noqa: F811
) -> None:
    """calculatePostConfigChangeNodeDisruptionAction reads MachineConfiguration/cluster (on a
    real kube-apiserver: upstream's CRD, the status written through its subresource)."""
    user = {"files": [{"path": "/etc/app", "actions": [
        {"type": "Restart", "restart": {"serviceName": "app.service"}}]}]}  # fmt: skip
    create_machine_configuration(kube_cluster, status_object(user, generation=1, observed=1))
    node = make_node(fake_systemd=True)  # reads the calls the D-Bus test service recorded
    boot_on(node, kube_cluster)
    new = update_to(node, kube_cluster, app="threads=8\n")
    node.wait_state("Done", new)
    assert node.path("/etc/app/app.conf").read_text() == "threads=8\n"
    assert node.reboots_requested() == 0
    assert not node.events("Drain") and not node.events("Reboot")
    restarts = [c for c in node.bus.calls("RestartUnit") if "app.service" in json.dumps(c)]
    assert restarts, node.bus.calls()
    assert "Node disruption policies from MachineConfiguration/cluster" in node.log()
    assert _messages(node, "ServiceRestart") == [
        "Config changes do not require reboot. Service app.service was restarted."
    ]


def test_ca_rotation_lands_without_a_reboot(
    make_node: NodeFactory,
    kube_cluster: TestCluster,
    openshift: None,  # noqa: F811
) -> None:
    """The certificate writer follows the ControllerConfig; the node never reboots. (The
    service-CA rotation of the same handler: tests/e2e/test_service_ca.py.)"""
    node = make_node()
    node.path("/etc/docker/certs.d").mkdir(parents=True)
    name = boot_on(node, kube_cluster)
    path = "/apis/machineconfiguration.openshift.io/v1/controllerconfigs"
    kube_cluster.create(path, complete_controller_config())
    ca = node.path("/etc/kubernetes/kubelet-ca.crt")
    node.wait_for(lambda: ca.exists() and ca.read_bytes() == CA_A + b"\n", 15, "the kubelet CA")
    obj = kube_cluster.kube.request("GET", f"{path}/machine-config-controller")
    obj["spec"]["kubeAPIServerServingCAData"] = b64(CA_B)
    obj["spec"]["imageRegistryBundleData"] = []
    updated = kube_cluster.kube.request("PUT", f"{path}/machine-config-controller", body=obj)
    rv = updated["metadata"]["resourceVersion"]
    node.wait_for(lambda: ca.read_bytes() == CA_B, 15, "the rotated kubelet CA")
    node.wait_for(lambda: node.annotations().get(LAST_SYNCED) == rv, 15, "lastSynced annotation")
    assert not node.path("/etc/docker/certs.d/quay.io").exists()  # gone from the spec
    assert node.path("/etc/docker/certs.d/registry.local:5000/ca.crt").read_bytes() == CA_A
    assert node.reboots_requested() == 0
    assert node.state() == "Done" and node.annotations()[Annotation.CURRENT_CONFIG] == name
    assert f"Certificate was synced from controllerconfig resourceVersion {rv}" in node.log()


@pytest.mark.parametrize(
    ("field", "reason"),
    [
        ([{"file": "evil\x00.example.com", "data": b64(CA_B)}],
         'spec.imageRegistryBundleData[0]: invalid registry CA file name "evil\\x00.example.com"'),
        ([{"file": "quay.io", "data": b64(b"not a certificate")}],
         "spec.imageRegistryBundleData[0].data: not PEM certificates: no PEM block"),
    ],
    ids=["nul-in-name", "not-pem"],
)  # fmt: skip
@pytest.mark.fake_only("ControllerConfig machine-config-controller is a singleton")
def test_a_controller_config_the_writer_cannot_take_ends_degraded_with_a_reason(
    make_node: NodeFactory, kube_cluster: TestCluster, field: list[object], reason: str
) -> None:
    """Issue 28: every error an input can raise ends as Degraded with a reason (a NUL byte in
    a registry CA name once escaped as a ValueError into a silent retry loop), and nothing of
    a refused ControllerConfig is written: the good kubelet CA stays."""
    node = make_node()
    node.path("/etc/docker/certs.d").mkdir(parents=True)
    boot_on(node, kube_cluster)
    ca = node.path("/etc/kubernetes/kubelet-ca.crt")
    ca.parent.mkdir(parents=True, exist_ok=True)
    ca.write_bytes(CA_A + b"\n")
    path = "/apis/machineconfiguration.openshift.io/v1/controllerconfigs"
    kube_cluster.create(path, controller_config("1", imageRegistryBundleData=field,
                                                kubeAPIServerServingCAData=b64(CA_B)))  # fmt: skip
    node.wait_state("Degraded")
    assert node.annotations()[Annotation.REASON] == reason
    assert ca.read_bytes() == CA_A + b"\n"
    assert list(node.path("/etc/docker/certs.d").iterdir()) == []


def test_first_update_after_install_is_planned_against_the_install_config(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    """loadNodeAnnotations: node-annotations.json names the install config on a new Node."""
    node = make_node()
    name = kube_cluster.name("rendered-worker-1")
    doc = worker(name)
    create_config(kube_cluster, doc)
    node.provision(doc)  # what Ignition wrote at install time...
    node.path(CURRENT_CONFIG_PATH).unlink()  # ...with no currentconfig and no annotations
    initial = {Annotation.CURRENT_CONFIG: name, Annotation.DESIRED_CONFIG: name,
               Annotation.STATE: "Done"}  # fmt: skip
    node.path(INITIAL_ANNOTATIONS).write_text(json.dumps(initial))
    node.start()
    node.wait_ready()
    node.wait_state("Done", name)
    assert node.annotations()[Annotation.CURRENT_CONFIG] == name
    assert not node.path(INITIAL_ANNOTATIONS).exists()
    assert json.loads(node.path(INITIAL_ANNOTATIONS_BAK).read_text()) == initial
    assert _messages(node, "ConfigDriftMonitorStarted")  # drift watched from the first boot
    new = update_to(node, kube_cluster, secret='{"auths":{}}')
    node.wait_state("Done", new)
    # planned against rendered-worker-1: only the pull secret changed (policy None), no reboot;
    # against the empty config every file would be new and the node would reboot
    assert node.reboots_requested() == 0
    assert not node.events("Drain")


def _messages(node: AgentNode, reason: str, at_least: int = 1) -> list[str]:
    """The messages of ``reason`` Events, once ``at_least`` arrived (they are sent in the
    background, so they may land just after the annotation a test waited for)."""
    node.wait_for(lambda: len(node.events(reason)) >= at_least, 15, f"{reason} Events")
    return [e["message"] for e in node.events(reason)]


def test_os_update_events_as_upstream_applyOSChanges(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    node = make_node()
    old = boot_on(node, kube_cluster)
    new = update_to(node, kube_cluster, image=IMAGE_B)
    node.wait_reboot()
    assert _messages(node, "InClusterUpgrade") == [f"Updating from oscontainer {IMAGE_B}"]
    assert _messages(node, "OSUpdateStarted") == ["Upgrading OS"]
    assert _messages(node, "OSUpgradeApplied") == [
        f"OS upgrade applied; new MachineConfig ({new}) has new OS image ({IMAGE_B})"
    ]
    assert _messages(node, "OSUpdateStaged") == ["Changes to OS staged"]
    node.reboot()
    node.wait_state("Done", new)
    # kernel arguments only: no InClusterUpgrade, the OS image is skipped
    third = kube_cluster.name("rendered-worker-3")
    create_config(kube_cluster, worker(third, image=IMAGE_B, kargs=["nosmt"]))
    node.set_desired(third)
    node.wait_reboot(count=2)
    assert _messages(node, "OSUpgradeSkipped") == [
        f"OS upgrade skipped; new MachineConfig ({third}) has same OS image ({IMAGE_B}) "
        f"as old MachineConfig ({new})"
    ]
    assert "Changing kernel arguments" in _messages(node, "OSUpdateStarted", 2)
    assert len(_messages(node, "InClusterUpgrade")) == 1
    assert old != new


def test_skip_reboot_and_failed_service_reload_events(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    node = make_node(fake_systemd=True)  # a reload job made to fail: the D-Bus test service
    boot_on(node, kube_cluster)
    new = kube_cluster.name("rendered-worker-2")
    create_config(kube_cluster, worker(new, secret='{"auths":{}}'))  # default policy: None
    node.set_desired(new)
    node.wait_state("Done", new)
    assert _messages(node, "SkipReboot") == ["Config changes do not require reboot."]
    node.bus.fail_job("crio.service")
    third = kube_cluster.name("rendered-worker-3")
    create_config(kube_cluster, worker(third, secret='{"auths":{}}', extra_files=[
        file_entry("/etc/containers/policy.json", "{}")]))  # fmt: skip
    node.set_desired(third)
    node.wait_state("Degraded")
    _messages(node, "FailedServiceReload")
    (failed,) = node.events("FailedServiceReload")
    assert failed["type"] == "Warning"
    assert failed["message"].startswith("Reloading service crio.service failed. Error: ")
    assert "reloading crio.service configuration failed" in node.reason()


def test_bootstrap_pivot_to_the_install_configs_image(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    """checkStateOnFirstRun, bootstrapping: the boot image is older than the config's."""
    node = make_node()
    name = kube_cluster.name("rendered-worker-1")
    node.provision(worker(name))  # installed from the boot image (IMAGE_A)
    create_config(kube_cluster, worker(name, image=IMAGE_B))  # the cluster renders IMAGE_B
    node.path(CURRENT_CONFIG_PATH).unlink()
    initial = {Annotation.CURRENT_CONFIG: name, Annotation.DESIRED_CONFIG: name,
               Annotation.STATE: "Done"}  # fmt: skip
    node.path(INITIAL_ANNOTATIONS).write_text(json.dumps(initial))
    node.start()
    node.wait_reboot()
    assert "Bootstrap pivot required to: " + IMAGE_B in node.log()
    assert node.path(INITIAL_ANNOTATIONS).exists()  # kept until the node validates
    node.reboot()
    node.wait_ready()
    node.wait_for(lambda: node.path(INITIAL_ANNOTATIONS_BAK).exists(), 30, "bootstrap done")
    node.wait_state("Done", name)
    booted = next(d for d in node.rpm()["deployments"] if d["booted"])
    assert booted["container-image-reference"].endswith(IMAGE_B)
    assert node.current_on_disk() == name
    assert node.path(INITIAL_ANNOTATIONS_BAK).exists()
    assert not node.path(INITIAL_ANNOTATIONS).exists()
    assert node.reboots_requested() == 1


def test_certificate_writer_failure_degrades_until_a_sync_succeeds(
    make_node: NodeFactory,
    kube_cluster: TestCluster,
    openshift: None,  # noqa: F811
) -> None:
    """Upstream handleControllerConfigErr: a failed sync is Degraded (the error its reason);
    the next sync that succeeds lets the node be Done again, and no update sync clears it before."""
    node = make_node()
    name = boot_on(node, kube_cluster)
    blocker = node.path("/etc/kubernetes/kubelet-ca.crt")
    blocker.mkdir(parents=True)
    path = "/apis/machineconfiguration.openshift.io/v1/controllerconfigs"
    kube_cluster.create(path, complete_controller_config())
    reason = "cannot write file /etc/kubernetes/kubelet-ca.crt: a directory is in the way"
    node.wait_for(lambda: node.state() == "Degraded", 15, "Degraded by the certificate writer")
    assert node.annotations()[Annotation.REASON] == reason
    assert LAST_SYNCED not in node.annotations()
    # A hand-set Done (a wake-up of the update worker) does not hide the failure.
    kube_cluster.annotate(node.name, {Annotation.STATE: "Done", Annotation.REASON: ""})
    node.wait_for(lambda: node.state() == "Degraded", 15, "Degraded again")
    assert node.annotations()[Annotation.REASON] == reason
    blocker.rmdir()
    obj = kube_cluster.kube.request("GET", f"{path}/machine-config-controller")
    obj["spec"]["kubeAPIServerServingCAData"] = b64(CA_B)
    updated = kube_cluster.kube.request("PUT", f"{path}/machine-config-controller", body=obj)
    rv = updated["metadata"]["resourceVersion"]
    node.wait_for(lambda: node.state() == "Done", 15, "Done after a good certificate sync")
    assert blocker.read_bytes() == CA_B
    a = node.annotations()
    assert a[LAST_SYNCED] == rv and a[Annotation.REASON] == ""
    assert a[Annotation.CURRENT_CONFIG] == name
    assert node.reboots_requested() == 0
    assert f'Marking Degraded due to: "{reason}"' in node.log()


def test_invalid_new_ignition_is_degraded_in_upstreams_words(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    """Upstream update() -> newMachineConfigDiff parses the new config first: Degraded, not
    Unreconcilable; nothing on the node changes, and going back recovers."""
    node = make_node()
    name = boot_on(node, kube_cluster)
    before = _tree(node.root)
    new = kube_cluster.name("rendered-worker-2")
    doc = worker(new, app="threads=8\n")
    files = doc["spec"]["config"]["storage"]["files"]
    files.append(file_entry("etc/relative", "x"))
    create_config(kube_cluster, doc)
    node.set_desired(new)
    node.wait_state("Degraded")
    assert node.reason() == (
        "could not calculate config diff: parsing new Ignition config failed with error: "
        f'spec.config.storage.files[{len(files) - 1}].path: path not absolute: "etc/relative"'
    )
    assert not node.events("FailedToReconcile")
    assert _tree(node.root) == before
    assert node.reboots_requested() == 0
    node.set_desired(name)
    node.wait_state("Done", name)
