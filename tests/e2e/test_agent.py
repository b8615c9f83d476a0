"""``mcd start`` end to end (issue 6): the agent as a subprocess against the API server, with
the D-Bus test bus, the rpm-ostree stand-in and simulated reboots."""

from __future__ import annotations

import json
import time

from mcd.model.vocabulary import Annotation
from tests.e2e.configs import KEY_B, PULL_SECRET, worker
from tests.e2e.conftest import NodeFactory
from tests.e2e.harness import IMAGE_B, AgentNode, create_config
from tests.fakes.kubecluster import TestCluster


def boot_on(node: AgentNode, cluster: TestCluster, base: str = "rendered-worker-1", **kw: object) -> str:
    """Provision the node with a config, point the annotations at it, start the agent, wait Done."""
    name = cluster.name(base)
    doc = worker(name, **kw)  # type: ignore[arg-type]
    create_config(cluster, doc)
    node.provision(doc)
    cluster.annotate(node.name, {Annotation.CURRENT_CONFIG: name, Annotation.DESIRED_CONFIG: name,
                                 Annotation.STATE: "Done"})
    node.start()
    node.wait_state("Done", name)
    return name


def test_rebootless_update_of_pull_secret_and_ssh_key(make_node: NodeFactory, kube_cluster: TestCluster) -> None:
    node = make_node()
    boot_on(node, kube_cluster)
    new = kube_cluster.name("rendered-worker-2")
    create_config(kube_cluster, worker(new, secret='{"auths":{"r.example.com":{"auth":"bmV3"}}}', key=KEY_B))
    node.set_desired(new)
    node.wait_state("Done", new)
    assert json.loads(node.path(PULL_SECRET).read_text()) == {"auths": {"r.example.com": {"auth": "bmV3"}}}
    keys = node.path("/home/core/.ssh/authorized_keys.d/ignition").read_text()
    assert KEY_B in keys
    assert node.current_on_disk() == new
    assert node.reboots_requested() == 0
    assert not node.events("Drain") and not node.events("Cordon")
    assert not node.node().get("spec", {}).get("unschedulable")
    assert node.reason() == ""


def test_file_change_needing_reboot_drains_reboots_and_completes(make_node: NodeFactory, kube_cluster: TestCluster) -> None:
    node = make_node()
    boot_on(node, kube_cluster)
    ns = kube_cluster.namespace()
    kube_cluster.pod(ns, "web-0", node.name)
    new = kube_cluster.name("rendered-worker-2")
    create_config(kube_cluster, worker(new, app="threads=8\n"))
    node.set_desired(new)
    node.wait_reboot()
    assert node.state() == "Working"
    assert node.annotations()[Annotation.POST_CONFIG_ACTION] == "Rebooting"
    assert node.node()["spec"].get("unschedulable") is True
    assert "web-0" not in kube_cluster.pods_on(node.name)
    assert node.path("/etc/app/app.conf").read_text() == "threads=8\n"
    assert node.events("Drain") and node.events("Reboot")
    node.reboot()
    node.wait_state("Done", new)
    assert node.annotations()[Annotation.POST_CONFIG_ACTION] == ""
    assert not node.node()["spec"].get("unschedulable")
    assert node.current_on_disk() == new
    assert node.reboots_requested() == 1
    assert node.events("Uncordon")


def test_os_pivot_and_kernel_arguments_reboot_into_the_new_deployment(make_node: NodeFactory, kube_cluster: TestCluster) -> None:
    node = make_node()
    boot_on(node, kube_cluster)
    new = kube_cluster.name("rendered-worker-2")
    create_config(kube_cluster, worker(new, image=IMAGE_B, kargs=["nosmt", "mitigations=auto"]))
    node.set_desired(new)
    node.wait_reboot()
    assert node.current_on_disk() != new  # promoted only once the new deployment boots
    node.reboot()
    node.wait_state("Done", new)
    booted = next(d for d in node.rpm()["deployments"] if d["booted"])
    assert booted["container-image-reference"].endswith(IMAGE_B)
    assert {"nosmt", "mitigations=auto"} <= set(booted["kargs"])
    assert node.current_on_disk() == new


def test_missing_machineconfig_degrades_then_recovers_when_created(make_node: NodeFactory, kube_cluster: TestCluster) -> None:
    node = make_node()
    boot_on(node, kube_cluster)
    new = kube_cluster.name("rendered-worker-2")
    node.set_desired(new)
    node.wait_state("Degraded")
    assert node.reason() == f'machineconfig.machineconfiguration.openshift.io "{new}" not found'
    time.sleep(2)  # let the backoff grow: recovery must not wait for it
    started = time.monotonic()
    create_config(kube_cluster, worker(new, key=KEY_B))
    node.wait_state("Done", new)
    assert time.monotonic() - started < 5
    assert node.reboots_requested() == 0


def test_drifted_file_degrades_within_a_second_and_recovers_when_restored(make_node: NodeFactory, kube_cluster: TestCluster) -> None:
    node = make_node()
    name = boot_on(node, kube_cluster)
    conf = node.path("/etc/app/app.conf")
    original = conf.read_bytes()
    node.wait_for(lambda: "Config Drift Monitor started" in node.log(), 10, "drift monitor")
    started = time.monotonic()
    conf.write_text("threads=400\n")
    node.wait_state("Degraded", timeout=5)
    took = time.monotonic() - started
    assert took < 1.0, f"drift noticed after {took:.2f}s"
    assert node.reason() == (
        f'unexpected on-disk state validating against {name}: content mismatch for file "/etc/app/app.conf"'
    )
    assert node.events("ConfigDriftDetected")
    drift = [line for line in node.metrics().splitlines() if line.startswith("mcd_config_drift ")]
    assert drift and float(drift[0].split()[1]) > 0
    conf.write_bytes(original)
    node.wait_state("Done", name, timeout=10)
    assert node.reboots_requested() == 0
    drift = [line for line in node.metrics().splitlines() if line.startswith("mcd_config_drift ")]
    assert float(drift[0].split()[1]) == 0

    # drift again, then repair with the force file: re-applied with a reboot
    conf.chmod(0o600)
    node.wait_state("Degraded", timeout=5)
    assert "mode mismatch for file" in node.reason()
    node.path("/run/machine-config-daemon-force").write_text("")
    node.wait_reboot(timeout=10)
    node.reboot()
    node.wait_state("Done", name)
    assert conf.stat().st_mode & 0o777 == 0o644
    assert not node.path("/run/machine-config-daemon-force").exists()
