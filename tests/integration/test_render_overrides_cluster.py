"""The controller's writer reads ``MachineConfiguration.spec.irreconcilableValidationOverrides``
for the render's reconcilability check (as upstream's render controller): none without the
object, the listed storage sections with it. Also on a real kube-apiserver with upstream's
MachineConfiguration CRD."""

from __future__ import annotations

from mcd.cluster.pools import PoolWriter
from mcd.model.planning.reconcile import Overrides, StorageOverrides
from tests.e2e.test_mcn_degraded import (
    create_machine_configuration,
    machine_configuration,  # noqa: F401 (fixture)
)
from tests.fakes.kubecluster import TestCluster
from tests.unit.test_policy_status import status_object


def test_the_pool_writer_reads_the_clusters_irreconcilable_overrides(
    kube_cluster: TestCluster,
    machine_configuration: None,  # noqa: F811
) -> None:
    writer = PoolWriter(kube_cluster.kube)
    assert writer.irreconcilable_overrides() == Overrides()
    allowed = status_object({}, generation=1, observed=1)
    allowed["spec"]["irreconcilableValidationOverrides"] = {"storage": ["Disks", "Raid"]}
    create_machine_configuration(kube_cluster, allowed)
    assert writer.irreconcilable_overrides() == Overrides(
        storage=StorageOverrides(disks=True, raid=True)
    )
