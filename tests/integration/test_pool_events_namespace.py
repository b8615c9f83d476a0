"""Events about pools go where upstream's render and node controllers put them
(``NamespacedEventRecorder``): the controller's own namespace, found as the agent finds its
own ($MCD_EVENT_NAMESPACE, $POD_NAMESPACE, the service account's namespace, else ``default``),
with the pool reference carrying that namespace, which kube-apiserver requires (the fake
API server enforces the same rule). Also on a real kube-apiserver."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcd.cluster.events import SERVICE_ACCOUNT_NAMESPACE
from mcd.cluster.pools import PoolWriter
from tests.fakes.kubecluster import TestCluster

POOL = {"metadata": {"name": "worker", "uid": "5e1f-pool"}}


def pool_events(cluster: TestCluster, namespace: str) -> list[dict[str, object]]:
    listing = cluster.kube.request("GET", f"/api/v1/namespaces/{namespace}/events")
    return [e for e in listing["items"] if e["involvedObject"].get("kind") == "MachineConfigPool"
            and e["involvedObject"].get("uid") == "5e1f-pool"]  # fmt: skip


@pytest.mark.parametrize("variable", ["MCD_EVENT_NAMESPACE", "POD_NAMESPACE"])
def test_pool_events_go_to_the_controllers_namespace(
    kube_cluster: TestCluster, monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    ns = kube_cluster.namespace("ctl")
    for name in ("MCD_EVENT_NAMESPACE", "POD_NAMESPACE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(variable, ns)
    writer = PoolWriter(kube_cluster.kube)
    writer.event(POOL, "Updating", "Pool worker now targeting MachineConfig rendered-worker-1")
    [event] = pool_events(kube_cluster, ns)
    assert event["metadata"]["namespace"] == ns  # type: ignore[index]
    assert event["involvedObject"]["namespace"] == ns  # type: ignore[index]
    assert event["involvedObject"]["name"] == "worker"  # type: ignore[index]
    assert event["reason"] == "Updating"
    assert event["source"] == {"component": "machineconfigcontroller-nodecontroller"}
    assert not pool_events(kube_cluster, "default")


def test_outside_a_pod_pool_events_go_to_default_without_a_reference_namespace(
    kube_cluster: TestCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    if Path(SERVICE_ACCOUNT_NAMESPACE).exists():
        pytest.skip("running in a pod: its service account names a namespace")
    for name in ("MCD_EVENT_NAMESPACE", "POD_NAMESPACE"):
        monkeypatch.delenv(name, raising=False)
    PoolWriter(kube_cluster.kube).event(POOL, "Completed", "Pool worker has completed update",
                                        warning=False)  # fmt: skip
    found = [e for e in pool_events(kube_cluster, "default") if e["reason"] == "Completed"]
    assert found and "namespace" not in found[-1]["involvedObject"]  # type: ignore[operator]
