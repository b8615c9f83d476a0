"""What the plan decides and says in JSON (``mcd plan --json``): the legacy action table used
at firstboot and by once-from (upstream ``calculatePostConfigChangeAction``), each decision's
subject and rule, and the JSON keys a script reads."""

from __future__ import annotations

from typing import Any

import pytest

from mcd.model.disruption.policy import CRIO, NONE, REBOOT, reload, restart
from mcd.model.planning.actions import Decision
from mcd.model.planning.plan import make_plan
from tests.builders import file_entry, mc

CA = "/etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt"


def legacy(old_files: list[dict[str, Any]], new_files: list[dict[str, Any]], **new: Any) -> Any:
    return make_plan(mc("a", files=old_files), mc("b", files=new_files, **new), legacy=True)


def decisions(plan: Any) -> list[tuple[str, str, tuple[Any, ...]]]:
    return [(d.subject, d.rule, d.actions) for d in plan.decisions]


@pytest.mark.parametrize(
    ("path", "rule", "action"),
    [
        ("/etc/kubernetes/kubelet-ca.crt", "no action needed", NONE),
        ("/var/lib/kubelet/config.json", "no action needed", NONE),
        ("/etc/containers/registries.conf", "crio reads it on reload", reload(CRIO)),
        ("/etc/containers/policy.json", "crio reads it on reload", reload(CRIO)),
        ("/etc/machine-config-daemon/no-reboot/containers-gpg.pub", "crio reads it on reload",
         reload(CRIO)),
        ("/etc/containers/registries.d/quay.yaml", "crio reads it on reload", reload(CRIO)),
        (CA, "crio must restart for CA changes", restart(CRIO)),
        ("/etc/nmstate/openshift/br-ex.yml", "no action needed", NONE),
        ("/etc/nmstate/openshift/sub/x.yml", "not in the no-reboot list", REBOOT),
        ("/etc/containers/registries.d/sub/x.yaml", "not in the no-reboot list", REBOOT),
        ("/etc/chrony.conf", "not in the no-reboot list", REBOOT),
    ],
)  # fmt: skip
def test_the_legacy_table_file_by_file(path: str, rule: str, action: Any) -> None:
    x, y = file_entry(path, 'a = "x"\n'), file_entry(path, 'a = "y"\n')  # TOML for registries.conf
    for old, new in (([], [x]), ([x], [y]), ([x], [])):
        plan = legacy(old, new)
        assert decisions(plan) == [(f"file {path}", rule, (action,))]
        assert plan.actions == (action,)


def test_the_legacy_table_restart_wins_over_reload_in_any_order() -> None:
    policy = "/etc/containers/policy.json"
    # added files come before changed ones: the CA (restart) first, then policy.json (reload)
    plan = legacy([file_entry(policy, "{}")], [file_entry(policy, "{ }"), file_entry(CA, "ca")])
    assert [d.subject for d in plan.decisions] == [f"file {CA}", f"file {policy}"]
    assert plan.actions == (restart(CRIO),)
    # and the other way round
    plan = legacy([file_entry(CA, "ca")], [file_entry(CA, "ca2"), file_entry(policy, "{}")])
    assert [d.subject for d in plan.decisions] == [f"file {policy}", f"file {CA}"]
    assert plan.actions == (restart(CRIO),)


def test_the_legacy_table_stops_at_the_first_file_needing_a_reboot() -> None:
    plan = legacy([], [file_entry("/etc/a.conf", "a"), file_entry("/etc/b.conf", "b"),
                       file_entry("/etc/kubernetes/kubelet-ca.crt", "c")])  # fmt: skip
    assert decisions(plan) == [("file /etc/a.conf", "not in the no-reboot list", (REBOOT,))]
    assert plan.actions == (REBOOT,) and plan.reboot and plan.drain


def test_the_legacy_table_reboots_for_units_and_os_changes_naming_each() -> None:
    old = mc("a", kernelArguments=["a"])
    new = mc("b", kernelArguments=["b"], units=[{"name": "x.service", "contents": "[Unit]\n"}])
    plan = make_plan(old, new, legacy=True)
    assert decisions(plan) == [
        ("kernel arguments changed", "OS changes always reboot", (REBOOT,)),
        ("systemd units", "unit changes reboot (legacy table)", (REBOOT,)),
    ]
    units_only = make_plan(mc("a"), mc("b", units=[{"name": "x.service", "contents": "a"}]),
                           legacy=True)  # fmt: skip
    assert decisions(units_only) == [
        ("systemd units", "unit changes reboot (legacy table)", (REBOOT,))
    ]


def test_the_force_file_reboots_whatever_the_table() -> None:
    for table in (True, False):
        plan = make_plan(mc("a"), mc("b"), force=True, legacy=table)
        assert decisions(plan) == [("force file", "the force file forces a reboot", (REBOOT,))]
        assert plan.actions == (REBOOT,)


def test_no_file_changed_in_the_legacy_table_is_no_action() -> None:
    plan = legacy([file_entry("/etc/a", "x")], [file_entry("/etc/a", "x")])
    assert plan.actions == (NONE,) and plan.decisions == ()


def test_plan_json_has_every_key_a_script_reads() -> None:
    old = mc("rendered-1", files=[file_entry("/etc/containers/policy.json", "{}")],
             kernelArguments=["a"])  # fmt: skip
    new = mc("rendered-2", files=[file_entry("/etc/containers/policy.json", '{"x": 1}'),
                                  file_entry("/etc/new", "n")], kernelArguments=["b"])  # fmt: skip
    doc = make_plan(old, new).to_json()
    assert doc == {
        "old": "rendered-1",
        "new": "rendered-2",
        "reconcilable": True,
        "reason": "",
        "diff": ["kargs", "files"],
        "actions": [{"type": "Reboot"}],
        "drain": True,
        "drainReason": "the update reboots the node",
        "reboot": True,
        "cost": "reboot",
        "files": {"added": ["/etc/new"], "changed": ["/etc/containers/policy.json"],
                  "removed": []},
        "units": {"added": [], "changed": [], "removed": []},
        "kernelArguments": ["--delete-if-present=a", "--append=b"],
        "osChanges": "Changing kernel arguments",
        "decisions": [{"subject": "kernel arguments changed", "rule": "OS changes always reboot",
                       "actions": [{"type": "Reboot"}]}],
        "force": False,
        "policySource": "the default cluster policies",
        "host": None,
        "notApplicable": [],
        "rebootKind": {"kind": "full",
                       "why": "the kernel or its command line changes (kargs)"},
    }  # fmt: skip


def test_a_decision_in_json_names_each_actions_service() -> None:
    decision = Decision("file /etc/x", "user policy for /etc/x", (restart("a.service"), NONE))
    assert decision.to_json() == {
        "subject": "file /etc/x",
        "rule": "user policy for /etc/x",
        "actions": [{"type": "Restart", "service": "a.service"}, {"type": "None"}],
    }


def test_an_unreconcilable_plan_in_json_has_the_reason_and_no_actions() -> None:
    plan = make_plan(mc("a"), mc("b", storage={"disks": [{"device": "/dev/sdb"}]}))
    doc = plan.to_json()
    assert doc["reconcilable"] is False
    assert str(doc["reason"]).endswith("ignition disks section contains changes")
    assert (doc["actions"], doc["decisions"], doc["drain"], doc["reboot"]) == ([], [], False, False)
    assert doc["cost"] == "none"


@pytest.mark.parametrize(
    ("new", "said"),
    [
        ({"osImageURL": "quay.io/rhcos@sha256:" + "2" * 64}, "Upgrading OS"),
        ({"extensions": ["usbguard"]}, "Installing extensions"),
        ({"kernelType": "realtime"}, "Changing kernel type"),
        ({"kernelArguments": ["nosmt"]}, "Changing kernel arguments"),
        ({"osImageURL": "quay.io/rhcos@sha256:" + "2" * 64, "extensions": ["usbguard"],
          "kernelType": "realtime", "kernelArguments": ["nosmt"]},
         "Upgrading OS; Installing extensions; Changing kernel type; Changing kernel arguments"),
        ({}, ""),
    ],
)  # fmt: skip
def test_the_os_step_is_described_in_upstreams_order(new: dict[str, Any], said: str) -> None:
    old = mc("a", osImageURL="quay.io/rhcos@sha256:" + "1" * 64)
    spec = {"osImageURL": "quay.io/rhcos@sha256:" + "1" * 64, **new}
    assert make_plan(old, mc("b", **spec)).diff.os_changes_string() == said
