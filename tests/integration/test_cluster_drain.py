"""Drain, uncordon, Events and MachineConfig fetch against the API server (fake or real)."""

from __future__ import annotations

import threading
import time

import pytest

from mcd.cluster.configs import MachineConfigNotFound, get_machine_config
from mcd.cluster.drain import (
    CORDONED_BY,
    LEGACY_CORDONED_BY,
    ControllerDrainer,
    DrainError,
    SelfDrainer,
)
from mcd.cluster.drain.errors import DEFAULT_TIMEOUT
from mcd.cluster.drain.handshake import _duration
from mcd.cluster.events import EventRecorder, Reason
from mcd.cluster.node import NodeWriter, annotations_of
from mcd.model.vocabulary import Annotation
from tests.fakes.kubecluster import TestCluster, eventually


def drainer(cluster: TestCluster, node: str, namespace: str, timeout: float = 60.0) -> SelfDrainer:
    writer = NodeWriter(cluster.kube, node)
    events = EventRecorder(cluster.kube, node)
    return SelfDrainer(
        cluster.kube, writer, events, timeout=timeout, retry_interval=0.2, poll_interval=0.05
    )


def daemonset_pod(cluster: TestCluster, namespace: str, node: str) -> str:
    """A DaemonSet pinned to ``node`` and its pod there; the pod's name.

    On a real cluster the DaemonSet controller makes the pod (and would delete one it does not
    want); on the fake, which runs no controllers, the test makes it with the owner reference."""
    ds = cluster.create(f"/apis/apps/v1/namespaces/{namespace}/daemonsets", {
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
        "spec": {"selector": {"matchLabels": {"app": "agent"}},
                 "updateStrategy": {"type": "OnDelete"},
                 "template": {"metadata": {"labels": {"app": "agent"}},
                              "spec": {"affinity": {"nodeAffinity": {
                                           "requiredDuringSchedulingIgnoredDuringExecution": {
                                               "nodeSelectorTerms": [{"matchFields": [{
                                                   "key": "metadata.name", "operator": "In",
                                                   "values": [node]}]}]}}},
                                       "tolerations": [{"operator": "Exists"}],
                                       "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9"}]}}},
    })  # fmt: skip
    if cluster.fake is None:
        owned: list[str] = []

        def made() -> bool:
            owned[:] = [p for p in cluster.pods_on(node) if p.startswith("agent-")]
            return bool(owned)

        assert eventually(made, 60), "the DaemonSet controller made no pod"
        return owned[0]
    owner = {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent",
             "uid": ds["metadata"]["uid"], "controller": True}  # fmt: skip
    cluster.pod(namespace, "agent-x", node, {"app": "agent"}, ownerReferences=[owner])
    return "agent-x"


def test_drain_50_pods_with_a_budget_blocking_one(kube_cluster: TestCluster) -> None:
    node, ns = kube_cluster.node("worker"), kube_cluster.namespace("apps")
    for i in range(49):
        kube_cluster.pod(ns, f"web-{i}", node, {"app": "web"})
    kube_cluster.pod(ns, "db-0", node, {"app": "db"})
    kube_cluster.pdb(ns, "db-pdb", {"app": "db"}, min_available=1)
    agent = daemonset_pod(kube_cluster, ns, node)
    kube_cluster.pod(ns, "static-x", node, annotations={"kubernetes.io/config.mirror": "abc"})
    assert eventually(lambda: kube_cluster.budget_in_force(ns, "db-pdb"), 60)

    # the fake deletes an evicted pod at once; on a real cluster its kubelet takes a grace period
    # to finish it, so the drain is given the time for 49 real terminations
    timeout = 3 if kube_cluster.fake is not None else 30
    with pytest.raises(DrainError) as failed:
        drainer(kube_cluster, node, ns, timeout=timeout).drain("rendered-worker-2")
    message = str(failed.value)
    assert message.startswith(
        f"failed to drain node: {node} after 0h0m{timeout}s: 1 pod(s) not evicted: "
    ), message[:600]
    assert f"{ns}/db-0: blocked by PodDisruptionBudget {ns}/db-pdb" in message
    assert "needs 1 healthy pods and has 1 currently" in message
    assert eventually(lambda: kube_cluster.pods_on(node) == sorted([agent, "db-0", "static-x"]))
    assert any(
        e["reason"] == "FailedToDrain" and e["type"] == "Warning"
        for e in kube_cluster.events_for(node)
    )

    threading.Timer(0.5, kube_cluster.set_min_available, (ns, "db-pdb", 0)).start()
    drainer(kube_cluster, node, ns).drain("rendered-worker-2")
    assert kube_cluster.pods_on(node) == sorted([agent, "static-x"])  # DaemonSet, mirror pods stay
    got = kube_cluster.get_node(node)
    assert got["spec"]["unschedulable"] is True
    reasons = [e["reason"] for e in kube_cluster.events_for(node)]
    assert "Cordon" in reasons and "Drain" in reasons


def test_uncordon_only_undoes_mcds_own_cordon(kube_cluster: TestCluster) -> None:
    ns = kube_cluster.namespace("apps")
    node = kube_cluster.node("worker")
    d = drainer(kube_cluster, node, ns)
    d.drain("rendered-worker-2")
    assert annotations_of(kube_cluster.get_node(node))[CORDONED_BY] == "rendered-worker-2"
    d.uncordon("rendered-worker-2")
    got = kube_cluster.get_node(node)
    assert not got["spec"].get("unschedulable") and CORDONED_BY not in annotations_of(got)

    admin = kube_cluster.node("cordoned")
    kube_cluster.kube.request(
        "PATCH", f"/api/v1/nodes/{admin}", body={"spec": {"unschedulable": True}},
        content_type="application/strategic-merge-patch+json",
    )  # fmt: skip
    d2 = drainer(kube_cluster, admin, ns)
    d2.drain("rendered-worker-2")
    d2.uncordon("rendered-worker-2")
    assert (
        kube_cluster.get_node(admin)["spec"]["unschedulable"] is True
    )  # the admin's cordon survives


def test_a_cordon_an_older_agent_marked_in_its_domain_is_still_mcds_to_undo(
    kube_cluster: TestCluster,
) -> None:
    """Before one annotation domain, mcd marked its cordon ``mcd/cordoned-by``: a node left
    cordoned that way by an older agent is uncordoned after the update, and the old key goes."""
    assert CORDONED_BY == "mcd-project.github.io/cordoned-by"
    ns = kube_cluster.namespace("apps")
    node = kube_cluster.node("upgraded")
    kube_cluster.kube.request(
        "PATCH", f"/api/v1/nodes/{node}", content_type="application/merge-patch+json",
        body={"spec": {"unschedulable": True},
              "metadata": {"annotations": {LEGACY_CORDONED_BY: "rendered-worker-1"}}},
    )  # fmt: skip
    d = drainer(kube_cluster, node, ns)
    d.drain("rendered-worker-2")  # mcd's own cordon: marked again, in the current domain only
    marks = annotations_of(kube_cluster.get_node(node))
    assert (marks.get(CORDONED_BY), LEGACY_CORDONED_BY in marks) == ("rendered-worker-2", False)
    kube_cluster.kube.request(
        "PATCH", f"/api/v1/nodes/{node}", content_type="application/merge-patch+json",
        body={"metadata": {"annotations": {CORDONED_BY: None,
                                           LEGACY_CORDONED_BY: "rendered-worker-2"}}},
    )  # fmt: skip
    d.uncordon("rendered-worker-2")  # only the old mark left, as an older agent left it
    got = kube_cluster.get_node(node)
    assert not got["spec"].get("unschedulable")
    assert not {CORDONED_BY, LEGACY_CORDONED_BY} & set(annotations_of(got))


def test_controller_mode_handshake(kube_cluster: TestCluster) -> None:
    node = kube_cluster.node("worker")
    writer = NodeWriter(kube_cluster.kube, node)
    d = ControllerDrainer(writer, timeout=10, poll_interval=0.05)

    def controller() -> None:
        for _ in range(200):
            ann = annotations_of(kube_cluster.get_node(node))
            want = ann.get(Annotation.DESIRED_DRAIN)
            if want and want != ann.get(Annotation.LAST_APPLIED_DRAIN):
                kube_cluster.annotate(node, {Annotation.LAST_APPLIED_DRAIN: want})
                if want.startswith("uncordon-"):
                    return
            time.sleep(0.05)

    t = threading.Thread(target=controller)
    t.start()
    d.drain("rendered-worker-2")
    assert (
        annotations_of(kube_cluster.get_node(node))[Annotation.DESIRED_DRAIN]
        == "drain-rendered-worker-2"
    )
    d.uncordon("rendered-worker-2")
    t.join(15)
    got = annotations_of(kube_cluster.get_node(node))
    assert got[Annotation.LAST_APPLIED_DRAIN] == "uncordon-rendered-worker-2"


def test_controller_mode_times_out_with_the_upstream_reason(kube_cluster: TestCluster) -> None:
    node = kube_cluster.node("worker")
    d = ControllerDrainer(NodeWriter(kube_cluster.kube, node), timeout=0.3, poll_interval=0.05)
    with pytest.raises(DrainError, match=f"failed to drain node: {node} after 0.3 seconds. "):
        d.drain("rendered-worker-2")


def test_the_drain_timeout_message_is_upstreams_at_the_default() -> None:
    """Upstream's ``FailedToDrain`` text names its fixed hour; mcd names the wait it had
    (``--drain-timeout``), which is upstream's text at the default."""
    assert _duration(DEFAULT_TIMEOUT) == "1 hour"
    assert _duration(1800) == "30 minutes" and _duration(7200) == "2 hours"


def test_events_carry_upstream_reasons(kube_cluster: TestCluster) -> None:
    node = kube_cluster.node("worker")
    rec = EventRecorder(kube_cluster.kube, node, namespace="default")
    assert rec.record(Reason.CONFIG_DRIFT_DETECTED, 'content mismatch for file "/etc/foo"')
    assert rec.record(
        Reason.NODE_DONE, "Setting node worker, currentConfig rendered-worker-2 to Done"
    )
    events = {e["reason"]: e for e in kube_cluster.events_for(node)}
    assert events["ConfigDriftDetected"]["type"] == "Warning"
    assert events["NodeDone"]["type"] == "Normal"
    assert events["NodeDone"]["involvedObject"]["kind"] == "Node"
    assert events["NodeDone"]["source"]["component"] == "machineconfigdaemon"


def test_machineconfig_fetch_and_missing(kube_cluster: TestCluster) -> None:
    name = kube_cluster.name("rendered-worker")
    kube_cluster.create("/apis/machineconfiguration.openshift.io/v1/machineconfigs", {
        "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
        "metadata": {"name": name}, "spec": {"config": {"ignition": {"version": "3.4.0"}}},
    })  # fmt: skip
    got = get_machine_config(kube_cluster.kube, name)
    assert got["spec"]["config"]["ignition"]["version"] == "3.4.0"
    with pytest.raises(
        MachineConfigNotFound,
        match=r'machineconfig\.machineconfiguration\.openshift\.io "nope" not found',
    ):
        get_machine_config(kube_cluster.kube, "nope")
