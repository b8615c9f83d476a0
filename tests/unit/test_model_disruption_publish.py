"""What mcd's controller publishes on MachineConfiguration/cluster, as upstream's operator
(``syncMachineConfiguration`` with ``MergeClusterPolicies``): the status the agents plan with,
checked against upstream's CRD schema and against the test's own reading of upstream's merge
(``status_object``)."""

from __future__ import annotations

import copy
from typing import Any

from mcd.model.disruption.policy import DEFAULT_POLICIES, NONE, restart
from mcd.model.disruption.policy_status import parse_status_policies, status_ready
from mcd.model.disruption.publish import AS_EXPECTED, DEGRADED, FAILED, publish
from tests.unit.test_policy_status import USER, crd_schema, schema_problems, status_object

NOW, LATER = "2026-11-27T22:50:00Z", "2026-11-27T23:00:00Z"


def machine_configuration(user: dict[str, Any], generation: int = 1) -> dict[str, Any]:
    """As the API server hands it out: the spec, no status yet."""
    return {
        "apiVersion": "operator.openshift.io/v1",
        "kind": "MachineConfiguration",
        "metadata": {"name": "cluster", "generation": generation},
        "spec": {"managementState": "Managed", "nodeDisruptionPolicy": user},
    }


def test_the_status_is_the_spec_merged_over_the_defaults() -> None:
    obj = machine_configuration(USER, generation=3)
    published = publish(obj, "v1", NOW)
    assert published.problem == ""
    assert published.status == status_object(USER, generation=3, observed=3)["status"]
    done = {**obj, "status": published.status}
    assert schema_problems(done, crd_schema()) == []
    assert status_ready(done)
    policies = parse_status_policies(done, "status")
    chrony = policies.closest_file_policy("/etc/chrony.conf")
    assert chrony is not None and chrony.actions == (restart("chronyd.service"),)
    assert publish(done, "v1", LATER).status is None  # nothing changed: nothing written


def test_no_policy_publishes_upstreams_defaults() -> None:
    published = publish({"metadata": {"name": "cluster", "generation": 1},
                         "spec": {"managementState": "Managed"}}, "v1", NOW)  # fmt: skip
    assert published.status is not None
    policies = parse_status_policies({"status": published.status}, "status")
    assert policies.files == DEFAULT_POLICIES.files and policies.units == DEFAULT_POLICIES.units
    assert policies.sshkey == (NONE,)


def test_empty_actions_are_published_as_upstream() -> None:
    """The CRD admits an empty ``actions``: upstream's convert keeps the entry with ``[]``, and
    an SSH key policy with none leaves the default."""
    user = {"files": [{"path": "/etc/quiet", "actions": []}], "sshkey": {"actions": []}}
    published = publish(machine_configuration(user), "v1", NOW)
    assert published.status is not None and published.problem == ""
    cluster = published.status["nodeDisruptionPolicyStatus"]["clusterPolicies"]
    assert cluster["files"][-1] == {"path": "/etc/quiet", "actions": []}
    assert cluster["sshkey"] == {"actions": [{"type": "None"}]}


def test_other_status_fields_are_kept() -> None:
    obj = machine_configuration(USER)
    boot = {"type": "BootImageUpdateDegraded", "status": "False", "reason": "NA",
            "message": "0 Degraded", "lastTransitionTime": NOW}  # fmt: skip
    obj["status"] = {"conditions": [boot], "managedBootImagesStatus": {"machineManagers": []}}
    published = publish(obj, "v1", LATER)
    assert published.status is not None
    assert published.status["conditions"] == [boot]
    assert published.status["managedBootImagesStatus"] == {"machineManagers": []}


def test_a_spec_the_crd_refuses_is_not_published_and_says_why() -> None:
    """An API server that does not run the CRD's rules let it in: the last published policies
    and observedGeneration stand (the agents wait), Degraded says why in upstream's words."""
    good = machine_configuration(USER, generation=1)
    good["status"] = publish(good, "v1", NOW).status
    bad = copy.deepcopy(good)
    bad["metadata"]["generation"] = 2
    bad["spec"]["nodeDisruptionPolicy"]["files"][0]["actions"] = [
        {"type": "Reboot"}, {"type": "Drain"}]  # fmt: skip
    published = publish(bad, "v1", NOW)
    assert published.status is not None
    assert published.problem == (
        "spec.nodeDisruptionPolicy.files[0].actions: Reboot action can only be specified standalone"
    )
    assert published.status["observedGeneration"] == 1
    assert published.status["nodeDisruptionPolicyStatus"] == good["status"][
        "nodeDisruptionPolicyStatus"]  # fmt: skip
    (degraded,) = published.status["conditions"]
    assert degraded == {
        "type": DEGRADED, "status": "True", "reason": FAILED,
        "message": f"Failed to resync v1 because: {published.problem}",
        "lastTransitionTime": NOW,
    }  # fmt: skip
    bad["status"] = published.status
    assert schema_problems(bad, crd_schema()) == []
    assert not status_ready(bad)
    assert publish(bad, "v1", LATER).status is None  # said once, its time kept
    fixed = copy.deepcopy(bad)
    fixed["metadata"]["generation"] = 3
    fixed["spec"]["nodeDisruptionPolicy"]["files"][0]["actions"] = [{"type": "Drain"}]
    published = publish(fixed, "v1", LATER)
    assert published.status is not None and published.problem == ""
    assert published.status["observedGeneration"] == 3
    (degraded,) = published.status["conditions"]
    assert (degraded["status"], degraded["reason"], degraded["message"]) == (
        "False", AS_EXPECTED, "")  # fmt: skip
    assert degraded["lastTransitionTime"] == LATER
