"""Exactly one controller paces a pool (issue 40, item 7), on a live API server (the fake,
or the real kube-apiserver):

* two controllers holding different Leases (as the Deployment's ``mcd/mcd-controller`` and a
  laptop's started with another ``--namespace``) both lead, but only the one recorded on the
  pool (``mcd-project.github.io/pacer``) renders it, targets its nodes and writes its status;
  the other says why in one log line and a Warning Event in its own namespace, naming the
  pacer's Lease and the way to hand over; ``--take-over-from`` hands it over once that Lease
  is released;
* the controller refuses to run while upstream's machine-config-controller does (its Lease, or
  its Deployment, in openshift-machine-config-operator): one line, exit code 78.
"""

from __future__ import annotations

import contextlib
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from mcd.cluster.api import ApiError
from mcd.cluster.configs import MACHINECONFIGS
from mcd.cluster.node import annotations_of
from mcd.cluster.pools import NODES, POOLS
from mcd.model.vocabulary import Annotation
from tests.e2e.configs import worker
from tests.e2e.controller_harness import (
    ControllerProc,
    create_pool,
    get_pool,
    label_node,
    machine_config,
    pool,
    pool_condition,
    target,
    wait,
)
from tests.e2e.test_controller import BASE, _crds, play_agent  # noqa: F401 - the CRD fixture
from tests.fakes.kubecluster import TestCluster

PACER = "mcd-project.github.io/pacer"
LEASE = "mcd-controller"
UPSTREAM_NS = "openshift-machine-config-operator"


def pacer(cluster: TestCluster) -> str:
    return str((get_pool(cluster, "worker")["metadata"].get("annotations") or {}).get(PACER, ""))


def events(cluster: TestCluster, namespace: str, reason: str) -> list[str]:
    found = cluster.kube.request("GET", f"/api/v1/namespaces/{namespace}/events")["items"]
    return [e["message"] for e in found if e["reason"] == reason
            and e["involvedObject"].get("kind") == "MachineConfigPool"
            and e["involvedObject"].get("name") == "worker"]  # fmt: skip


def desired(cluster: TestCluster, nodes: list[str]) -> set[str]:
    return {annotations_of(cluster.get_node(n)).get(Annotation.DESIRED_CONFIG, "") for n in nodes}


@pytest.mark.fake_too("the writes of each controller, from the fake's request log")
def test_two_controllers_with_different_leases_pace_a_pool_once(
    kube_cluster: TestCluster, tmp_path: Path
) -> None:
    cluster = kube_cluster
    ns_a, ns_b = cluster.namespace("mcd"), cluster.namespace("laptop")
    lease_a, lease_b = f"{ns_a}/{LEASE}", f"{ns_b}/{LEASE}"
    cluster.create(MACHINECONFIGS, machine_config("00-worker", "worker", BASE))
    create_pool(cluster, pool("worker", ["worker"], "worker", max_unavailable=2))
    a = ControllerProc(cluster, tmp_path, "a", ns_a).start()
    b = ControllerProc(cluster, tmp_path, "b", ns_b)
    b2 = ControllerProc(cluster, tmp_path, "b2", ns_b)
    try:
        wait(lambda: target(cluster, "worker") != "", 30, "rendered by a", a.log)
        first = target(cluster, "worker")
        assert pacer(cluster) == lease_a
        wait(lambda: events(cluster, ns_a, "PacerRecorded") != [], 30, "a's Event", a.log)
        assert any(m == f"Pool worker: now paced by the controller of Lease {lease_a}"
                   for m in events(cluster, ns_a, "PacerRecorded"))  # fmt: skip
        names = [cluster.node(f"w{i}") for i in range(2)]
        for name in names:
            label_node(cluster, name, "worker")
            play_agent(cluster, name, first)
        wait(lambda: pool_condition(cluster, "worker", "Updated").get("status") == "True",
             30, "updated", a.log)  # fmt: skip

        b.start()  # a second controller with another Lease: it leads too
        wait(lambda: b.metric("mcd_controller_leader") == 1, 30, "b leads its own Lease", b.log)
        refusal = f"Pool worker is paced by the controller of Lease {lease_a} (held by "
        wait(lambda: refusal in b.log(), 30, "b says why", b.log)
        wait(lambda: events(cluster, ns_b, "PacedElsewhere") != [], 30, "b's Event", b.log)
        told = events(cluster, ns_b, "PacedElsewhere")
        assert len(told) == 1 and told[0].startswith(refusal), told
        assert told[0].endswith(
            f"this controller (Lease {lease_b}) does not write it. To hand it over: stop that "
            f"controller, then start this one with --take-over-from {lease_a}, or remove the "
            f"record: kubectl annotate machineconfigpool worker {PACER}-"
        )
        syncs = b.metric("mcd_controller_syncs_total")
        wait(lambda: b.metric("mcd_controller_syncs_total") >= syncs + 2, 30, "b passes", b.log)

        # a change: a renders and rolls it out; b writes nothing of the pool or its nodes
        fake = cluster.fake
        if fake is not None:
            fake.reset_log()
        cluster.create(MACHINECONFIGS, machine_config("50-app", "worker",
                                                      worker("app", app="threads=8\n")))  # fmt: skip
        wait(lambda: target(cluster, "worker") != first, 30, "re-rendered", a.log)
        second = target(cluster, "worker")
        wait(lambda: desired(cluster, names) == {second}, 30, "targeted", a.log)
        for name in names:
            play_agent(cluster, name, second)
        wait(lambda: pool_condition(cluster, "worker", "Updated").get("status") == "True",
             30, "updated again", a.log)  # fmt: skip
        time.sleep(2)  # b renews its Lease and runs passes meanwhile
        assert pacer(cluster) == lease_a
        assert "Pool worker: setting desiredConfig" not in b.log()
        assert "Pool worker: setting desiredConfig" in a.log()
        _, text = b.get("/metrics")
        assert 'pool="worker"' not in text, "b reports no pool it does not pace"
        assert b.metric("mcd_controller_leader") == 1 and b.proc is not None
        if fake is not None:  # the fake's request log: every write b made
            writes = {(r.method, r.path.split("?")[0]) for r in fake.requests
                      if f"_{b.proc.pid})" in r.user_agent and r.method != "GET"}  # fmt: skip
            lease_path = f"/apis/coordination.k8s.io/v1/namespaces/{ns_b}/leases/{LEASE}"
            by_b = [(r.method, r.path) for r in fake.requests if f"_{b.proc.pid})" in r.user_agent]
            assert ("GET", lease_path) in by_b, "b held its Lease meanwhile"
            assert writes <= {("PUT", lease_path)}, writes  # its Lease, nothing else
            assert not [r for r in fake.requests if f"_{b.proc.pid})" in r.user_agent
                        and r.path.startswith((POOLS, NODES, MACHINECONFIGS))
                        and r.method != "GET"]  # fmt: skip

        # the hand-over: a stops (releasing its Lease); b, started again to take over
        assert a.stop() == 0, a.log()[-3000:]
        assert b.stop() == 0, b.log()[-3000:]
        b2.start("--take-over-from", lease_a)
        wait(lambda: pacer(cluster) == lease_b, 30, "b2 took the pool over", b2.log)
        wait(lambda: events(cluster, ns_b, "PacerRecorded") != [], 30, "b2's Event", b2.log)
        taken = events(cluster, ns_b, "PacerRecorded")
        assert any(m.startswith(f"Pool worker: taken over from the controller of Lease "
                                f"{lease_a} (its Lease is not held; --take-over-from {lease_a})")
                   for m in taken), taken  # fmt: skip
        cluster.create(MACHINECONFIGS, machine_config("60-more", "worker",
                                                      worker("more", app="threads=9\n")))  # fmt: skip
        wait(lambda: target(cluster, "worker") not in (first, second), 30, "b2 renders", b2.log)
        third = target(cluster, "worker")
        wait(lambda: desired(cluster, names) == {third}, 30, "b2 targets", b2.log)
    finally:
        a.stop()
        b.stop()
        assert b2.stop() in (0, None), b2.log()[-3000:]


def _upstream_lease(cluster: TestCluster, holder: str) -> None:
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    meta: dict[str, str] = {"name": "machine-config-controller", "namespace": UPSTREAM_NS}
    body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": meta,
            "spec": {"holderIdentity": holder, "leaseDurationSeconds": 137,
                     "acquireTime": now, "renewTime": now, "leaseTransitions": 0}}  # fmt: skip
    path = f"/apis/coordination.k8s.io/v1/namespaces/{UPSTREAM_NS}/leases"
    try:
        old = cluster.kube.request("GET", f"{path}/machine-config-controller")
    except ApiError:
        cluster.create(path, body)
        return
    meta["resourceVersion"] = old["metadata"]["resourceVersion"]
    cluster.kube.request("PUT", f"{path}/machine-config-controller", body=body)


def test_the_controller_does_not_run_beside_upstreams(
    kube_cluster: TestCluster, tmp_path: Path
) -> None:
    cluster = kube_cluster
    with contextlib.suppress(ApiError):  # an earlier test's, on a cluster reused
        cluster.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                              "metadata": {"name": UPSTREAM_NS}})  # fmt: skip
    ns = cluster.namespace("mcd")
    create_pool(cluster, pool("worker", ["worker"], "worker"))
    own_lease = f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{LEASE}"

    # upstream's controller holds its Lease
    _upstream_lease(cluster, "mcc-7d9f_0f1e")
    ctl = ControllerProc(cluster, tmp_path, "a", ns).start()
    assert ctl.proc is not None
    assert ctl.proc.wait(60) == 78, ctl.log()[-3000:]
    assert (
        "Upstream's machine-config-controller runs on this cluster (its Lease "
        f"{UPSTREAM_NS}/machine-config-controller is held by mcc-7d9f_0f1e (renewed "
    ) in ctl.log()
    assert (
        "mcd's controller does not run beside it (both would write desiredConfig and pool "
        "status); exiting with code 78" in ctl.log()
    )
    with contextlib.suppress(ApiError):
        cluster.kube.request("GET", own_lease)
        raise AssertionError("it took its Lease")

    # released (upstream stopped), but its Deployment is there, scaled up
    _upstream_lease(cluster, "")
    deployments = f"/apis/apps/v1/namespaces/{UPSTREAM_NS}/deployments"
    labels = {"k8s-app": "machine-config-controller"}
    cluster.create(deployments, {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "machine-config-controller", "namespace": UPSTREAM_NS},
        "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels}, "spec": {"containers": [
                     {"name": "machine-config-controller", "image": "example.invalid/mcc"}]}}},
    })  # fmt: skip
    ctl = ControllerProc(cluster, tmp_path, "b", ns).start()
    assert ctl.proc is not None
    assert ctl.proc.wait(60) == 78, ctl.log()[-3000:]
    assert (
        "Upstream's machine-config-controller runs on this cluster (its Deployment "
        f"{UPSTREAM_NS}/machine-config-controller has 1 replica(s))"
    ) in ctl.log()

    # scaled to zero: mcd's controller runs
    cluster.kube.request("PATCH", f"{deployments}/machine-config-controller",
                         body={"spec": {"replicas": 0}},
                         content_type="application/merge-patch+json")  # fmt: skip
    ctl = ControllerProc(cluster, tmp_path, "c", ns).start()
    try:
        wait(lambda: ctl.metric("mcd_controller_leader") == 1, 30, "it leads", ctl.log)
        wait(lambda: pacer(cluster) == f"{ns}/{LEASE}", 30, "it paces", ctl.log)
    finally:
        assert ctl.stop() == 0, ctl.log()[-3000:]
