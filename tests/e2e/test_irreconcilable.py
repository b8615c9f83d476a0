"""Irreconcilable overrides and the MachineConfigNode's irreconcilableChanges (issue 32).

Upstream: the daemon's ``reconcilable`` takes ``MachineConfiguration/cluster``'s
``spec.irreconcilableValidationOverrides``; an allowed storage change is applied (nothing to
write on a running node) and ``IrreconcilableReporterImpl`` reports what differs from the
install-time config (``/etc/mcs-machine-config-content.json``) on the MachineConfigNode.
"""

from __future__ import annotations

import json
from typing import Any

from mcd.model.ignition.served import CONTENT
from tests.e2e.configs import worker
from tests.e2e.conftest import NodeFactory
from tests.e2e.harness import AgentNode, create_config
from tests.e2e.scenarios import boot_on
from tests.e2e.test_machineconfignode import MCN
from tests.e2e.test_mcn_degraded import (
    create_machine_configuration,
    machine_configuration,  # noqa: F401 (fixture)
)
from tests.fakes.kubecluster import TestCluster
from tests.unit.test_policy_status import status_object

Obj = dict[str, Any]
DISK = {"device": "/dev/sdb", "wipeTable": True}


def _install_time(node: AgentNode, cluster: TestCluster, name: str) -> None:
    """What the machine-config-server left on the node: the MachineConfig it served."""
    served = cluster.kube.request(
        "GET", f"/apis/machineconfiguration.openshift.io/v1/machineconfigs/{name}"
    )
    node.path(CONTENT).write_text(json.dumps(served))


def _changes(cluster: TestCluster, node: AgentNode) -> Any:
    mcn = cluster.kube.request("GET", f"{MCN}/{node.name}")
    return (mcn.get("status") or {}).get("irreconcilableChanges")


def test_an_allowed_storage_change_is_applied_and_reported_on_the_mcn(
    make_node: NodeFactory,
    kube_cluster: TestCluster,
    machine_configuration: None,  # noqa: F811
) -> None:
    """Also on a real kube-apiserver (upstream's MachineConfiguration CRD, daemonset/kubernetes/08's
    MachineConfigNode CRD: the report passes its schema)."""
    node = make_node()
    base = boot_on(node, kube_cluster)
    _install_time(node, kube_cluster, base)

    refused = kube_cluster.name("rendered-worker-2")
    create_config(kube_cluster, worker(refused, storage={"disks": [DISK]}))
    node.set_desired(refused)
    node.wait_state("Unreconcilable")
    assert "ignition disks section contains changes" in node.reason()

    allowed = status_object({}, generation=1, observed=1)
    allowed["spec"]["irreconcilableValidationOverrides"] = {"storage": ["Disks"]}
    create_machine_configuration(kube_cluster, allowed)
    applied = kube_cluster.name("rendered-worker-3")
    create_config(kube_cluster, worker(applied, storage={"disks": [DISK]}))
    node.set_desired(applied)
    node.wait_state("Done", applied)
    assert node.reboots_requested() == 0  # nothing the daemon writes changed
    node.wait_for(lambda: _changes(kube_cluster, node) is not None, 15, "irreconcilableChanges")
    assert _changes(kube_cluster, node) == [
        {"fieldPath": "spec.config.storage",
         "diff": '+ {"disks":[{"device":"/dev/sdb","wipeTable":true}]}\n'},
    ]  # fmt: skip
