"""The status upstream's operator publishes on ``MachineConfiguration/cluster``.

Upstream ``syncMachineConfiguration`` (pkg/operator/sync.go): the status is the current one
with ``nodeDisruptionPolicyStatus.clusterPolicies`` replaced by ``MergeClusterPolicies`` of
``spec.nodeDisruptionPolicy`` (pkg/apihelpers) and ``observedGeneration`` set to the object's
generation; nothing is written when that changes nothing. Each spec action becomes the status
action of the same type (``convertSpecActiontoStatusAction``), an entry's ``actions`` a list
even when empty, and an SSH key policy without actions leaves upstream's default.

A spec the CRD's rules refuse never reaches upstream's operator. One that reaches mcd anyway
(an API server that does not run the CRD's CEL rules, or an object older than the CRD) is not
published: the status keeps the policies last published and its ``observedGeneration`` (so the
agents wait, as for an operator that has not caught up), and a ``Degraded`` condition says why
in upstream's words for a failed sync (``syncDegradedStatus``: reason
``MachineConfigurationFailed``, ``Failed to resync <version> because: <error>``).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mcd.model.disruption.policy import (
    DEFAULT_POLICIES,
    Action,
    DisruptionPolicies,
    merge_policies,
    parse_user_policies,
)
from mcd.model.errors import PolicyError

Obj = dict[str, Any]

DEGRADED = "Degraded"
FAILED = "MachineConfigurationFailed"
"""Upstream ``taskFailed("MachineConfiguration")``."""
AS_EXPECTED = "AsExpected"
"""The reason once the spec is published again (a condition's reason may not be empty)."""


def status_actions(actions: tuple[Action, ...]) -> list[Obj]:
    """``[]NodeDisruptionPolicyStatusAction`` as JSON: the type, and the service of a Reload
    or Restart under its own key."""
    out: list[Obj] = []
    for action in actions:
        item: Obj = {"type": str(action.type)}
        if action.service:
            item[str(action.type).lower()] = {"serviceName": action.service}
        out.append(item)
    return out


def cluster_policies_json(policies: DisruptionPolicies) -> Obj:
    """``NodeDisruptionPolicyClusterStatus`` as upstream serialises it (``files`` and ``units``
    omitted when empty, ``sshkey`` always there)."""
    out: Obj = {}
    if policies.files:
        out["files"] = [{"path": p.path, "actions": status_actions(p.actions)}
                        for p in policies.files]  # fmt: skip
    if policies.units:
        out["units"] = [{"name": u.name, "actions": status_actions(u.actions)}
                        for u in policies.units]  # fmt: skip
    out["sshkey"] = {"actions": status_actions(policies.sshkey or ())}
    return out


@dataclass(frozen=True)
class Publication:
    status: Obj | None
    """The status to write; None when the current one stands as it is."""
    problem: str = ""
    """Why the spec was not published ("" when it was)."""


def publish(obj: Mapping[str, Any], version: str, now: str) -> Publication:
    """The status for ``obj`` (a ``MachineConfiguration``); ``now``: the time a condition
    changing its status records (RFC 3339)."""
    meta = obj.get("metadata") or {}
    current: Obj = copy.deepcopy(obj.get("status") or {})
    new = copy.deepcopy(current)
    spec = obj.get("spec") or {}
    try:
        user = parse_user_policies({"spec": spec}, empty_actions=True)
    except PolicyError as e:
        message = f"Failed to resync {version} because: {e}"
        _set_condition(new, "True", FAILED, message, now)
        return Publication(new if new != current else None, str(e))
    merged = merge_policies(DEFAULT_POLICIES, user)
    new["nodeDisruptionPolicyStatus"] = {"clusterPolicies": cluster_policies_json(merged)}
    generation = meta.get("generation")
    if isinstance(generation, int) and generation:
        new["observedGeneration"] = generation
    if any(c.get("type") == DEGRADED for c in new.get("conditions") or []):
        _set_condition(new, "False", AS_EXPECTED, "", now)
    return Publication(new if new != current else None)


def _set_condition(status: Obj, value: str, reason: str, message: str, now: str) -> None:
    """A ``metav1.Condition`` of type :data:`DEGRADED`, its transition time kept while its
    status stays (upstream ``SetStatusCondition``)."""
    conditions: list[Obj] = list(status.get("conditions") or [])
    have = next((c for c in conditions if c.get("type") == DEGRADED), None)
    since = have.get("lastTransitionTime") if have and have.get("status") == value else None
    condition = {"type": DEGRADED, "status": value, "reason": reason, "message": message,
                 "lastTransitionTime": since or now}  # fmt: skip
    if have is None:
        conditions.append(condition)
    else:
        conditions[conditions.index(have)] = condition
    status["conditions"] = conditions
