"""MachineConfigNode status as upstream's upgrademonitor computes it (issue 17)."""

from __future__ import annotations

from mcd.model.node import mcn as m

NOW, LATER = "2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z"


def report(old: m.Obj | None, parent: m.Condition, sub: m.Condition | None = None) -> m.Obj | None:
    return m.next_status(old, parent, sub, desired_spec="rendered-2", desired_annotation="rendered-2",
                         current_annotation="rendered-1", now=NOW)  # fmt: skip


def test_first_report_sets_every_condition_the_others_not_yet_occurred() -> None:
    status = report(None, m.phase(m.UPDATED, "Node n needs an update", m.FALSE))
    assert status is not None
    types = [c["type"] for c in status["conditions"]]
    assert types[0] == m.UPDATED and sorted(types) == sorted(m.ALL_CONDITIONS)
    prepared = next(c for c in status["conditions"] if c["type"] == m.UPDATE_PREPARED)
    assert prepared == {"type": "UpdatePrepared", "status": "False", "reason": "NotYetOccurred",
                        "message": "This node has not yet entered the UpdatePrepared phase",
                        "lastTransitionTime": NOW}  # fmt: skip
    assert status["configVersion"] == {"desired": "rendered-2", "current": "rendered-1"}


def test_the_same_phase_again_writes_nothing_and_a_child_gets_the_parents_name() -> None:
    first = report(None, m.phase(m.UPDATE_PREPARED, "Update Compatible."))
    assert report(first, m.phase(m.UPDATE_PREPARED, "Update Compatible.")) is None
    sub = m.child(m.UPDATE_EXECUTED, m.DRAINED, "Drained node.")
    after = report(first, m.phase(m.UPDATE_EXECUTED, "Draining", m.UNKNOWN, m.DRAINED), sub)
    assert after is not None
    drained = next(c for c in after["conditions"] if c["type"] == m.DRAINED)
    assert (drained["reason"], drained["status"]) == ("UpdateExecutedDrained", "True")


def test_updated_resets_the_phases_naming_the_update_and_an_incompatible_one_keeps_the_placeholder() -> (
    None
):
    status = report(None, m.phase(m.UPDATE_PREPARED, "Update Compatible."))
    done = report(status, m.phase(m.UPDATED, "Node n Updated"))
    assert done is not None
    prepared = next(c for c in done["conditions"] if c["type"] == m.UPDATE_PREPARED)
    assert prepared["status"] == "False"
    assert prepared["message"] == "Action during update to rendered-2: Update Compatible."
    refused = report(None, m.phase(m.UPDATE_PREPARED, "Update Failed", m.UNKNOWN))
    assert refused is not None and refused["configVersion"]["desired"] == m.NOT_YET_SET


def test_pool_from_the_node_roles() -> None:
    role = "node-role.kubernetes.io/"
    assert m.pool_of({}) == "worker"
    assert m.pool_of({role + "worker": ""}) == "worker"
    assert m.pool_of({role + "worker": "", role + "infra": ""}) == "infra"
    assert m.pool_of({role + "master": "", role + "worker": ""}) == "master"
    assert m.pool_of({role + "control-plane": ""}) == "master"
