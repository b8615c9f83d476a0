"""The admin's node disruption policy (``MachineConfiguration`` ``spec.nodeDisruptionPolicy``):
refused as the API server would refuse it, in the CRD's own words (read from upstream's CRD,
daemonset/kubernetes/12-machineconfiguration-crd.yaml), each refusal naming its field; and merged
over the defaults the way upstream's ``MergeClusterPolicies`` does."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from mcd.model.disruption.policy import (
    DEFAULT_POLICIES,
    DRAIN,
    NONE,
    REBOOT,
    DisruptionPolicies,
    FilePolicy,
    UnitPolicy,
    merge_policies,
    parse_user_policies,
    reload,
    restart,
    service_name_problem,
)
from mcd.model.errors import PolicyError

CRD = Path(__file__).resolve().parents[2] / "daemonset/kubernetes/12-machineconfiguration-crd.yaml"
NDP = "spec.nodeDisruptionPolicy"


def _crd_spec() -> dict[str, Any]:
    doc = yaml.safe_load(CRD.read_text())
    (version,) = [v for v in doc["spec"]["versions"] if v["name"] == "v1"]
    spec: dict[str, Any] = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    return spec


def _file_actions_schema() -> dict[str, Any]:
    ndp = _crd_spec()["properties"]["nodeDisruptionPolicy"]["properties"]
    actions: dict[str, Any] = ndp["files"]["items"]["properties"]["actions"]
    return actions


def _service_name_schema() -> dict[str, Any]:
    item = _file_actions_schema()["items"]["properties"]
    schema: dict[str, Any] = item["reload"]["properties"]["serviceName"]
    return schema


SERVICE_NAME = _service_name_schema()
TYPE_RULE, NAME_RULE = SERVICE_NAME["x-kubernetes-validations"]
ACTIONS_RULES = _file_actions_schema()["x-kubernetes-validations"]


def cel_regex(rule: str) -> str:
    """The regex of a CRD rule ``self.matches('...')`` (a CEL string: backslashes doubled)."""
    match = re.fullmatch(r"self\.matches\('(.*)'\)", rule)
    assert match is not None, rule
    return match.group(1).encode().decode("unicode_escape")


def crd_problem(name: str) -> str:
    """What the API server says about a serviceName, from the CRD alone."""
    if len(name) > SERVICE_NAME["maxLength"]:
        return f"Too long: may not be more than {SERVICE_NAME['maxLength']} bytes"
    for rule in (TYPE_RULE, NAME_RULE):
        if not re.search(cel_regex(rule["rule"]), name):
            return str(rule["message"])
    return ""


@pytest.mark.parametrize(
    "name",
    ["crio.service", "chronyd.service", "a.socket", "x.scope", "systemd-udevd.service",
     "dbus-:1.2-org.freedesktop.timedate1@0.service", "a\\x2db.mount", "crio", "crio.conf",
     ".service", "a/b.service", "crio service.service", "n" * 247 + ".service",
     "n" * 248 + ".service", "élan.service"],
)  # fmt: skip
def test_service_names_are_judged_in_the_crds_words(name: str) -> None:
    assert service_name_problem(name) == crd_problem(name)


@settings(max_examples=200)
@given(st.text(alphabet="ab:._\\-/ é", max_size=12), st.sampled_from(
    ["", ".service", ".socket", ".device", ".mount", ".automount", ".swap", ".target", ".path",
     ".timer", ".snapshot", ".slice", ".scope", ".conf", ".Service"]))  # fmt: skip
def test_any_service_name_is_judged_as_the_crd_judges_it(stem: str, suffix: str) -> None:
    assert service_name_problem(stem + suffix) == crd_problem(stem + suffix)


def refusal(doc: object) -> PolicyError:
    with pytest.raises(PolicyError) as e:
        parse_user_policies(doc)
    return e.value


def one_file(actions: Any) -> dict[str, Any]:
    return {"spec": {"nodeDisruptionPolicy": {"files": [{"path": "/etc/x", "actions": actions}]}}}


@pytest.mark.parametrize(
    ("doc", "field", "detail"),
    [
        ("policy", "", "expected an object, got a string"),
        ({"kind": "MachineConfig", "spec": {}}, "kind",
         'expected MachineConfiguration, got "MachineConfig"'),
        ({"metadata": {"name": "cluster"}}, "",
         "not a MachineConfiguration: no spec.nodeDisruptionPolicy"),
        ({"spec": []}, "spec", "expected an object, got a list"),
        ({"spec": {"nodeDisruptionPolicy": 5}}, NDP, "expected an object, got an integer"),
        ({"nodeDisruptionPolicy": {"files": {}}}, "nodeDisruptionPolicy.files",
         "expected a list, got an object"),
        ({"spec": {"nodeDisruptionPolicy": {"files": [{"actions": [{"type": "None"}]}]}}},
         f"{NDP}.files[0].path", "missing path"),
        ({"spec": {"nodeDisruptionPolicy": {"files": [{"path": "/a", "actions": [
            {"type": "None"}]}, 3]}}}, f"{NDP}.files[1]", "expected an object, got an integer"),
        ({"spec": {"nodeDisruptionPolicy": {"units": [{"actions": [{"type": "None"}]}]}}},
         f"{NDP}.units[0].name", "missing unit name"),
        ({"spec": {"nodeDisruptionPolicy": {"units": [{"name": "", "actions": []}]}}},
         f"{NDP}.units[0].name", "missing unit name"),
        ({"spec": {"nodeDisruptionPolicy": {"units": [None]}}}, f"{NDP}.units[0]",
         "expected an object, got null"),
        ({"spec": {"nodeDisruptionPolicy": {"units": [{"name": "a.service", "actions": [
            {"type": "Reload", "reload": {"serviceName": "crio"}}]}]}}},
         f"{NDP}.units[0].actions[0].reload.serviceName", str(TYPE_RULE["message"])),
        ({"spec": {"nodeDisruptionPolicy": {"sshkey": {"actions": []}}}},
         f"{NDP}.sshkey.actions", "at least one action is required"),
        ({"spec": {"nodeDisruptionPolicy": {"sshkey": []}}}, f"{NDP}.sshkey",
         "expected an object, got a list"),
        (one_file({}), f"{NDP}.files[0].actions", "expected a list, got an object"),
        (one_file([]), f"{NDP}.files[0].actions", "at least one action is required"),
        (one_file(["Reboot"]), f"{NDP}.files[0].actions[0]", "expected an object, got a string"),
        (one_file([{"type": True}]), f"{NDP}.files[0].actions[0].type",
         "expected a string, got a boolean"),
        (one_file([{"type": "Drain"}, {}]), f"{NDP}.files[0].actions[1].type",
         'unknown action type ""; expected one of Reboot, Drain, Reload, Restart, DaemonReload, '
         "None"),
        (one_file([{"type": "Special"}]), f"{NDP}.files[0].actions[0].type",
         'unknown action type "Special"; expected one of Reboot, Drain, Reload, Restart, '
         "DaemonReload, None"),
        (one_file([{"type": "Drain"}, {"type": "Restart"}]), f"{NDP}.files[0].actions[1]",
         "Restart requires restart.serviceName"),
        (one_file([{"type": "Restart", "restart": {"serviceName": ""}}]),
         f"{NDP}.files[0].actions[0]", "Restart requires restart.serviceName"),
        (one_file([{"type": "Reload", "reload": "crio.service"}]),
         f"{NDP}.files[0].actions[0].reload", "expected an object, got a string"),
        (one_file([{"type": "Reload", "reload": {"serviceName": 1}}]),
         f"{NDP}.files[0].actions[0].reload.serviceName", "expected a string, got an integer"),
        (one_file([{"type": "Restart", "restart": {"serviceName": "bad name.service"}}]),
         f"{NDP}.files[0].actions[0].restart.serviceName", str(NAME_RULE["message"])),
    ],
)  # fmt: skip
def test_a_bad_policy_is_refused_naming_the_field(doc: object, field: str, detail: str) -> None:
    error = refusal(doc)
    assert (error.field, error.detail) == (field, detail)


@pytest.mark.parametrize(("alone", "rule"), [("Reboot", 0), ("None", 1)])
@pytest.mark.parametrize("other", [{"type": "Drain"}, {"type": "DaemonReload"}])
def test_reboot_and_none_stand_alone_as_the_crd_says(
    alone: str, rule: int, other: dict[str, Any]
) -> None:
    message = str(ACTIONS_RULES[rule]["message"])
    for actions in ([{"type": alone}, other], [other, {"type": alone}]):
        error = refusal(one_file(actions))
        assert error.field == f"{NDP}.files[0].actions"
        assert message.startswith(error.detail)  # the CRD's words (mcd stops at the comma)
        assert error.detail.startswith(f"{alone} action can only be specified standalone")
    assert parse_user_policies(one_file([{"type": alone}])).files[0].actions in ((REBOOT,), (NONE,))


def test_a_valid_policy_is_the_admins_in_order() -> None:
    policies = parse_user_policies(
        {"kind": "MachineConfiguration", "spec": {"nodeDisruptionPolicy": {
            "files": [{"path": "/etc/chrony.conf", "actions": [
                {"type": "Drain"}, {"type": "Restart", "restart": {"serviceName": "chronyd.service"}}]}],
            "units": [{"name": "crio.service", "actions": [
                {"type": "Reload", "reload": {"serviceName": "crio.service"}}]}],
        }}}
    )  # fmt: skip
    assert policies.files == (
        FilePolicy("/etc/chrony.conf", (DRAIN, restart("chronyd.service")), "user"),
    )
    assert policies.units == (UnitPolicy("crio.service", (reload("crio.service"),), "user"),)
    assert policies.sshkey is None  # not given: the default stays after the merge
    assert policies.source == "spec.nodeDisruptionPolicy merged over the default cluster policies"
    bare = parse_user_policies(
        {"nodeDisruptionPolicy": {"sshkey": {"actions": [{"type": "Drain"}]}}}
    )
    assert (bare.sshkey, bare.sshkey_origin) == ((DRAIN,), "user")


def test_merging_replaces_in_place_appends_the_rest_and_keeps_the_default_ssh_policy() -> None:
    defaults = DisruptionPolicies(
        files=(FilePolicy("/a", (NONE,)), FilePolicy("/b", (NONE,))),
        units=(UnitPolicy("a.service", (NONE,)), UnitPolicy("b.service", (NONE,))),
        sshkey=(NONE,),
    )
    user = DisruptionPolicies(
        files=(FilePolicy("/c", (DRAIN,), "user"), FilePolicy("/b", (REBOOT,), "user")),
        units=(
            UnitPolicy("b.service", (DRAIN,), "user"),
            UnitPolicy("c.service", (DRAIN,), "user"),
        ),
        source="admin",
    )
    merged = merge_policies(defaults, user)
    assert merged.files == (
        FilePolicy("/a", (NONE,)),
        FilePolicy("/b", (REBOOT,), "user"),
        FilePolicy("/c", (DRAIN,), "user"),
    )
    assert merged.units == (
        UnitPolicy("a.service", (NONE,)),
        UnitPolicy("b.service", (DRAIN,), "user"),
        UnitPolicy("c.service", (DRAIN,), "user"),
    )
    assert (merged.sshkey, merged.sshkey_origin, merged.source) == ((NONE,), "default", "admin")
    with_key = merge_policies(defaults, DisruptionPolicies(sshkey=(REBOOT,), sshkey_origin="user"))
    assert (with_key.sshkey, with_key.sshkey_origin) == ((REBOOT,), "user")


def test_the_real_defaults_merge_by_path() -> None:
    user = parse_user_policies(one_file([{"type": "Drain"}]))
    merged = merge_policies(DEFAULT_POLICIES, user)
    assert merged.files[: len(DEFAULT_POLICIES.files)] == DEFAULT_POLICIES.files
    assert merged.files[-1] == FilePolicy("/etc/x", (DRAIN,), "user")
