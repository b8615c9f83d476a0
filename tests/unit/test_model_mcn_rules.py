"""MachineConfigNode status rules a cluster admin reads (``oc get machineconfignode``), as
upstream's upgrademonitor sets them: one condition per type, the time each changed, a manual
change sensed on an Updated node, the reset once the node is Updated, and the pool's name."""

from __future__ import annotations

from typing import Any

from mcd.model.node import mcn as m

NOW, LATER = "2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z"
ROLE = "node-role.kubernetes.io/"


def report(
    old: m.Obj | None, parent: m.Condition, sub: m.Condition | None = None, now: str = NOW
) -> m.Obj:
    status = m.next_status(
        old,
        parent,
        sub,
        desired_spec="rendered-2",
        desired_annotation="rendered-2",
        current_annotation="rendered-1",
        now=now,
    )
    assert status is not None
    return status


def cond(status: m.Obj, kind: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = [c for c in status["conditions"] if c["type"] == kind]
    assert len(found) == 1, f"{kind}: {len(found)} conditions"
    return found[0]


def types(status: m.Obj) -> list[str]:
    return [c["type"] for c in status["conditions"]]


def test_phases_and_children_carry_upstreams_reasons() -> None:
    assert m.phase(m.UPDATED, "Node n Updated").reason == m.UPDATED
    assert m.phase(m.UPDATED, "Node n Updated").status == m.TRUE
    named = m.phase(m.UPDATE_EXECUTED, "Draining", m.UNKNOWN, m.DRAINED)
    assert (named.reason, named.status, named.message) == ("Drained", m.UNKNOWN, "Draining")
    sub = m.child(m.UPDATE_EXECUTED, m.CORDONED, "Cordoned node.", m.FALSE)
    assert sub == m.Condition(m.CORDONED, "UpdateExecutedCordoned", "Cordoned node.", m.FALSE)
    assert m.child(m.UPDATE_EXECUTED, m.DRAINED, "Drained node.").status == m.TRUE


def test_a_first_report_with_a_child_sets_both_at_that_time() -> None:
    sub = m.child(m.UPDATE_EXECUTED, m.CORDONED, "Cordoned node.")
    status = report(None, m.phase(m.UPDATE_EXECUTED, "Cordoning", m.UNKNOWN), sub)
    assert types(status)[:2] == [m.UPDATE_EXECUTED, m.CORDONED]
    assert cond(status, m.CORDONED) == {
        "type": m.CORDONED,
        "status": m.TRUE,
        "reason": "UpdateExecutedCordoned",
        "message": "Cordoned node.",
        "lastTransitionTime": NOW,
    }
    assert cond(status, m.UPDATE_EXECUTED)["lastTransitionTime"] == NOW
    assert sorted(types(status)) == sorted(m.ALL_CONDITIONS)


def test_each_later_report_replaces_its_conditions_never_adding_a_second() -> None:
    first = report(None, m.phase(m.UPDATE_PREPARED, "Update Compatible."))
    sub = m.child(m.UPDATE_EXECUTED, m.DRAINED, "Draining node.", m.UNKNOWN)
    draining = report(first, m.phase(m.UPDATE_EXECUTED, "Draining", m.UNKNOWN), sub, LATER)
    drained = report(
        draining,
        m.phase(m.UPDATE_EXECUTED, "Drained", m.UNKNOWN),
        m.child(m.UPDATE_EXECUTED, m.DRAINED, "Drained node."),
        LATER,
    )
    assert sorted(types(drained)) == sorted(m.ALL_CONDITIONS)  # still one of each
    assert cond(drained, m.DRAINED)["message"] == "Drained node."
    assert cond(drained, m.DRAINED)["status"] == m.TRUE
    assert cond(drained, m.DRAINED)["lastTransitionTime"] == LATER
    assert cond(drained, m.UPDATE_EXECUTED)["message"] == "Drained"
    # a condition the report does not touch keeps its time
    assert cond(drained, m.UPDATE_PREPARED)["lastTransitionTime"] == NOW


def test_the_same_status_with_another_message_is_written() -> None:
    first = report(None, m.phase(m.UPDATE_EXECUTED, "Draining", m.UNKNOWN))
    again = report(first, m.phase(m.UPDATE_EXECUTED, "Drain failed, retrying", m.UNKNOWN), None)
    assert cond(again, m.UPDATE_EXECUTED)["message"] == "Drain failed, retrying"
    other_status = report(first, m.phase(m.UPDATE_EXECUTED, "Draining", m.TRUE))
    assert cond(other_status, m.UPDATE_EXECUTED)["status"] == m.TRUE


def test_a_condition_missing_from_an_older_status_is_added_once() -> None:
    old = {"conditions": [{"type": m.UPDATE_PREPARED, "status": m.TRUE, "message": "ok"}]}
    sub = m.child(m.UPDATE_EXECUTED, m.CORDONED, "Cordoned node.")
    status = report(old, m.phase(m.UPDATE_EXECUTED, "Cordoning", m.UNKNOWN), sub)
    assert types(status) == [m.UPDATE_PREPARED, m.CORDONED, m.UPDATE_EXECUTED]
    assert cond(status, m.UPDATE_EXECUTED)["lastTransitionTime"] == NOW


def test_an_updated_node_that_starts_another_phase_was_changed_by_hand() -> None:
    updated = report(None, m.phase(m.UPDATED, "Node n Updated"))
    assert cond(updated, m.UPDATED)["status"] == m.TRUE
    touched = report(updated, m.phase(m.UPDATE_PREPARED, "Update Compatible."), None, LATER)
    assert cond(touched, m.UPDATED) == {
        "type": m.UPDATED,
        "status": m.FALSE,
        "reason": m.UPDATED,
        "message": "This node is not updated, sensed disruption via a manual update.",
        "lastTransitionTime": LATER,
    }
    # Updated reported again while True: no manual change, nothing to write
    assert (
        m.next_status(
            updated,
            m.phase(m.UPDATED, "Node n Updated"),
            None,
            desired_spec="rendered-2",
            desired_annotation="rendered-2",
            current_annotation="rendered-1",
            now=LATER,
        )
        is None
    )


def test_once_updated_only_the_phases_still_set_are_reset() -> None:
    status = report(None, m.phase(m.UPDATE_PREPARED, "Update Compatible."))
    done = report(status, m.phase(m.UPDATED, "Node n Updated"), None, LATER)
    prepared = cond(done, m.UPDATE_PREPARED)
    assert (prepared["status"], prepared["lastTransitionTime"]) == (m.FALSE, LATER)
    assert prepared["reason"] == m.UPDATE_PREPARED  # kept
    never = cond(done, m.DRAINED)  # never happened: left as it was
    assert never["message"] == "This node has not yet entered the Drained phase"
    assert never["lastTransitionTime"] == NOW
    assert cond(done, m.UPDATED)["status"] == m.TRUE


def test_a_reset_condition_without_a_message_names_only_the_update() -> None:
    old = {"conditions": [{"type": m.RESUMED, "status": m.TRUE, "reason": m.RESUMED}]}
    done = report(old, m.phase(m.UPDATED, "Node n Updated"))
    assert cond(done, m.RESUMED)["message"] == "Action during update to rendered-2: "


def test_the_desired_version_is_set_once_the_update_is_prepared() -> None:
    prepared = report(None, m.phase(m.UPDATE_PREPARED, "Update Compatible."))
    assert prepared["configVersion"] == {"desired": "rendered-2", "current": "rendered-1"}
    executing = report(None, m.phase(m.UPDATE_EXECUTED, "Draining", m.UNKNOWN))
    assert executing["configVersion"]["desired"] == "rendered-2"
    refused = report(None, m.phase(m.UPDATE_PREPARED, "Update Failed", m.UNKNOWN))
    assert refused["configVersion"]["desired"] == m.NOT_YET_SET
    first_boot = m.next_status(
        None,
        m.phase(m.UPDATED, "Node n Updated"),
        None,
        desired_spec="rendered-1",
        desired_annotation="",
        current_annotation="",
        now=NOW,
    )
    assert first_boot is not None
    assert first_boot["configVersion"] == {"desired": m.NOT_YET_SET}


def test_a_control_plane_node_is_master_whatever_other_roles_it_has() -> None:
    assert m.pool_of({ROLE + "master": "", ROLE + "infra": ""}) == "master"
    assert m.pool_of({ROLE + "control-plane": "", ROLE + "infra": ""}) == "master"


def test_a_custom_role_wins_over_worker_whatever_its_name() -> None:
    # sorted, "zeta" comes after "worker": still the custom pool
    assert m.pool_of({ROLE + "worker": "", ROLE + "zeta": ""}) == "zeta"
    assert m.pool_of({ROLE + "worker": "", "kubernetes.io/hostname": "n1"}) == "worker"
