"""Node disruption policies from the cluster.

Upstream ``calculatePostConfigChangeNodeDisruptionAction``.

The ``MachineConfiguration`` named ``cluster`` (``operator.openshift.io/v1``)
holds the operator's merged policies in ``status.nodeDisruptionPolicyStatus``.
Upstream polls it every 5 s for up to 2 minutes until the status has caught up
with the object's generation, then fails with ``NodeDisruptionPolicyStatus was
not ready: ...``. A cluster without that resource (no such object, or no such
kind: plain Kubernetes) uses upstream's default cluster policies.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from mcd.cluster.api import ApiError, Kube
from mcd.model.disruption.policy import DEFAULT_POLICIES, DisruptionPolicies
from mcd.model.disruption.policy_status import NOT_UP_TO_DATE, parse_status_policies, status_ready
from mcd.model.planning.overrides import overrides_from
from mcd.model.planning.reconcile import Overrides

log = logging.getLogger(__name__)

MACHINECONFIGURATION = "/apis/operator.openshift.io/v1/machineconfigurations/cluster"
SOURCE = "MachineConfiguration/cluster status.nodeDisruptionPolicyStatus"
NO_RESOURCE = "the default cluster policies (no MachineConfiguration/cluster)"


class PoliciesNotReady(Exception):
    """The operator has not published policies for the current spec in time."""


def cluster_policies(
    kube: Kube,
    interval: float = 5.0,
    timeout: float = 120.0,
    sleep: Callable[[float], None] = time.sleep,
) -> DisruptionPolicies:
    """The policies the daemon must use now; ``PoliciesNotReady`` after ``timeout``."""
    return cluster_rules(kube, interval, timeout, sleep)[0]


def cluster_rules(
    kube: Kube,
    interval: float = 5.0,
    timeout: float = 120.0,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[DisruptionPolicies, Overrides]:
    """The policies the daemon must use now and the irreconcilable overrides, both from one
    read of MachineConfiguration/cluster (an update reads it once, not once per rule);
    ``PoliciesNotReady`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            obj = kube.request("GET", MACHINECONFIGURATION)
        except ApiError as e:
            if e.status != 404:
                raise
            log.info("No MachineConfiguration/cluster; using the default node disruption policies")
            return DisruptionPolicies(
                files=DEFAULT_POLICIES.files,
                units=DEFAULT_POLICIES.units,
                sshkey=DEFAULT_POLICIES.sshkey,
                source=NO_RESOURCE,
            ), Overrides()
        if status_ready(obj):
            log.info("Calculating node disruption actions")
            return parse_status_policies(obj, SOURCE), overrides_from(obj)
        log.error(
            "calculating NodeDisruptionPolicies: NodeDisruptionPolicyStatus is not up to date."
        )
        if time.monotonic() >= deadline:
            log.error("NodeDisruptionPolicyStatus was not ready: %s", NOT_UP_TO_DATE)
            raise PoliciesNotReady(f"NodeDisruptionPolicyStatus was not ready: {NOT_UP_TO_DATE}")
        sleep(interval)


def irreconcilable_overrides(kube: Kube) -> Overrides:
    """``spec.irreconcilableValidationOverrides`` of MachineConfiguration/cluster, as upstream's
    ``GetIrreconcilableOverrides`` reads it for the daemon's and the render controller's
    reconcilability checks; none without that object (plain Kubernetes)."""
    try:
        return overrides_from(kube.request("GET", MACHINECONFIGURATION))
    except ApiError as e:
        if e.status != 404:
            raise
        return Overrides()
