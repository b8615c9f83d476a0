"""Retarget while draining, no silent overwrite of a hot-fix, and a reason for every wait
(issue 21). Each case blocks a drain with a PodDisruptionBudget (or a pod that never
terminates) and changes something while the agent waits."""

from __future__ import annotations

import threading
import time
from typing import Any

from mcd.cluster.drain import CORDONED_BY
from mcd.model.vocabulary import Annotation
from tests.e2e.configs import APP_CONF, worker
from tests.e2e.conftest import NodeFactory
from tests.e2e.harness import create_config
from tests.e2e.scenarios import (
    blocked_update,
    boot_on,
    release_and_no_reboot,
    release_and_reboot,
    update_to,
)
from tests.fakes.kubecluster import TestCluster


def cordoned(node_obj: dict[str, Any]) -> bool:
    return bool((node_obj.get("spec") or {}).get("unschedulable"))


def test_desired_reverted_during_a_blocked_drain_uncordons_and_never_reboots(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    node = make_node()
    ns, _new = blocked_update(node, kube_cluster)
    old = node.annotations()[Annotation.CURRENT_CONFIG]
    assert cordoned(node.node())
    node.set_desired(old)  # the administrator changes their mind
    node.wait_state("Done", old, timeout=15)
    node.wait_for(lambda: not cordoned(node.node()), 10, "the node uncordoned")
    assert CORDONED_BY not in node.annotations()
    assert node.reason() == ""
    release_and_no_reboot(node, kube_cluster, ns)  # the budget releases: nothing happens
    assert node.path(APP_CONF).read_text() == "threads=4\n"
    assert node.current_on_disk() == old
    assert node.state() == "Done"


def test_flapping_b_a_c_during_a_blocked_drain_reboots_once_into_c(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    node = make_node()
    ns, _b = blocked_update(node, kube_cluster)
    a = node.annotations()[Annotation.CURRENT_CONFIG]
    c = kube_cluster.name("rendered-worker-3")
    create_config(kube_cluster, worker(c, app="threads=16\n"))
    node.set_desired(a)
    time.sleep(0.3)
    node.set_desired(c)
    node.wait_for(lambda: "db-pdb" in node.reason() and node.state() == "Working", 15,
                  "the drain for C blocked")  # fmt: skip
    release_and_reboot(node, kube_cluster, ns)
    node.reboot()
    node.wait_state("Done", c)
    assert node.path(APP_CONF).read_text() == "threads=16\n"
    assert node.reboots_requested() == 1  # before: into B, then again into C


def test_machineconfig_replaced_during_the_drain_writes_the_new_content(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    node = make_node()
    ns, new = blocked_update(node, kube_cluster)
    path = f"/apis/machineconfiguration.openshift.io/v1/machineconfigs/{new}"
    kube_cluster.kube.request("DELETE", path)
    kube_cluster.kube.request(
        "POST", "/apis/machineconfiguration.openshift.io/v1/machineconfigs",
        body=worker(new, app="threads=32\n"),
    )  # fmt: skip
    time.sleep(3)  # the agent notices while it waits
    release_and_reboot(node, kube_cluster, ns)
    assert node.path(APP_CONF).read_text() == "threads=32\n"  # before: the fetched threads=8
    node.reboot()
    node.wait_state("Done", new)
    assert node.reboots_requested() == 1


def test_hot_fix_during_a_blocked_drain_stops_the_update_until_restored(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    node = make_node()
    ns, new = blocked_update(node, kube_cluster)
    old = node.annotations()[Annotation.CURRENT_CONFIG]
    conf = node.path(APP_CONF)
    conf.write_text("hot-fix\n")  # a path the update is about to write
    node.wait_state("Degraded", timeout=10)
    assert node.reason() == (
        f'unexpected on-disk state validating against {old}: content mismatch for file "{APP_CONF}"'
    )
    node.wait_for(lambda: not cordoned(node.node()), 10, "the node uncordoned")
    release_and_no_reboot(node, kube_cluster, ns)
    assert conf.read_text() == "hot-fix\n"  # before: overwritten without a word
    node.wait_events("PreflightConfigDriftCheckFailed")
    conf.write_text("threads=4\n")  # restored: the update goes on by itself
    node.wait_reboot(timeout=30)
    node.reboot()
    node.wait_state("Done", new)
    assert conf.read_text() == "threads=8\n"


def test_drifted_unit_the_update_does_not_touch_is_never_reported_done(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    node = make_node()
    ns, _new = blocked_update(node, kube_cluster)
    unit = node.path("/etc/systemd/system/app.service")
    unit.write_text(unit.read_text() + "# hand edit\n")
    node.wait_state("Degraded", timeout=10)
    assert 'content mismatch for file "/etc/systemd/system/app.service"' in node.reason()
    release_and_no_reboot(node, kube_cluster, ns)
    assert node.state() == "Degraded"
    assert unit.read_text().endswith("# hand edit\n")


def test_a_pod_that_never_terminates_is_named_with_its_finalizers(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    node = make_node()
    boot_on(node, kube_cluster)
    ns = kube_cluster.namespace()
    kube_cluster.pod(ns, "stuck-0", node.name, finalizers=["example.com/hold"])
    new = kube_cluster.name("rendered-worker-2")
    create_config(kube_cluster, worker(new, app="threads=8\n"))
    started = time.monotonic()
    node.set_desired(new)
    node.wait_for(lambda: "stuck-0" in node.reason(), 30, "a reason naming the pod")
    assert time.monotonic() - started < 25  # not only at the drain timeout (1 h)
    assert node.state() == "Working"
    assert node.reason() == (
        f"drain of node {node.name} waiting for pods to terminate: {ns}/stuck-0: "
        "evicted, still terminating (finalizers: example.com/hold)"
    )
    pod = f"/api/v1/namespaces/{ns}/pods/stuck-0"
    kube_cluster.kube.request("PATCH", pod, body={"metadata": {"finalizers": None}},
                              content_type="application/merge-patch+json")  # fmt: skip
    node.wait_reboot(timeout=30)
    node.reboot()
    node.wait_state("Done", new)


def test_controller_mode_withdraws_its_drain_request_when_desired_is_reverted(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    """--drain-mode controller: the drain controller never answers drain-<new> (a blocked
    drain); reverting desiredConfig makes the agent ask uncordon-<current> instead."""
    node = make_node(drain_mode="controller")
    stop = threading.Event()

    def controller() -> None:  # answers uncordon requests only
        while not stop.wait(0.05):
            a = node.annotations()
            wanted = a.get(Annotation.DESIRED_DRAIN, "")
            if wanted.startswith("uncordon-") and a.get(Annotation.LAST_APPLIED_DRAIN) != wanted:
                kube_cluster.annotate(node.name, {Annotation.LAST_APPLIED_DRAIN: wanted})

    echo = threading.Thread(target=controller, daemon=True)
    echo.start()
    try:
        old = boot_on(node, kube_cluster)
        new = update_to(node, kube_cluster, app="threads=8\n")
        node.wait_for(lambda: node.annotations().get(Annotation.DESIRED_DRAIN) == f"drain-{new}",
                      15, "the drain request")  # fmt: skip
        node.set_desired(old)
        node.wait_for(
            lambda: node.annotations().get(Annotation.LAST_APPLIED_DRAIN) == f"uncordon-{old}",
            15, "the uncordon request answered",
        )  # fmt: skip
        node.wait_state("Done", old, timeout=10)
        assert node.reboots_requested() == 0
        assert node.path(APP_CONF).read_text() == "threads=4\n"
    finally:
        stop.set()
        echo.join(5)
