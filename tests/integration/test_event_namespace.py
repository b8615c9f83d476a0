"""Events about the Node land where upstream's land (issue 32): in the daemon's namespace,
the involved Node carrying that namespace (so kube-apiserver takes it), ``OSUpdateStaged``
in ``default`` with no involved namespace (upstream creates that one itself)."""

from __future__ import annotations

import pytest

from mcd.cluster.events import EventRecorder, Reason
from tests.fakes.kubecluster import TestCluster


@pytest.mark.cluster
def test_node_events_are_in_the_daemons_namespace_with_the_node_as_involved_object(
    kube_cluster: TestCluster,
) -> None:
    name = kube_cluster.node("events")
    namespace = kube_cluster.namespace("mcd-events")
    rec = EventRecorder(kube_cluster.kube, name, node_uid="u-1", namespace=namespace)
    assert rec.record(Reason.NODE_DONE, "Setting node done")
    assert rec.record(Reason.OS_UPDATE_STAGED, "Changes to OS staged")
    found = {e["reason"]: e for e in kube_cluster.events_for(name)}
    done, staged = found["NodeDone"], found["OSUpdateStaged"]
    assert done["metadata"]["namespace"] == namespace
    assert done["involvedObject"]["kind"] == "Node"
    assert done["involvedObject"]["name"] == name
    assert done["involvedObject"]["namespace"] == namespace
    assert done["source"] == {"component": "machineconfigdaemon", "host": name}
    assert staged["metadata"]["namespace"] == "default"
    assert "namespace" not in staged["involvedObject"]


@pytest.mark.cluster
def test_a_host_service_with_no_namespace_records_in_default_as_client_go_does(
    kube_cluster: TestCluster,
) -> None:
    name = kube_cluster.node("events")
    rec = EventRecorder(kube_cluster.kube, name, namespace="default")
    assert rec.record(Reason.NODE_DONE, "Setting node done")
    (event,) = kube_cluster.events_for(name)
    assert event["metadata"]["namespace"] == "default"
    assert "namespace" not in event["involvedObject"]
