"""``mcd plan``'s words: what changes, why each action, whether the node drains and reboots,
and the cost, in the order an admin reads them; an unreconcilable update says only why."""

from __future__ import annotations

from mcd.model.disruption.policy import SPECIAL, reload
from mcd.model.planning.describe import describe_action, describe_plan
from mcd.model.planning.plan import make_plan
from tests.builders import file_entry, mc

IMAGE_1 = "quay.io/openshift/rhcos@sha256:" + "1" * 64
IMAGE_2 = "quay.io/openshift/rhcos@sha256:" + "2" * 64
REG = "/etc/containers/registries.conf"
REGISTRIES = 'unqualified-search-registries = ["registry.access.redhat.com"]\n'


def lines(text: str) -> list[str]:
    assert text.endswith("\n") and not text.endswith("\n\n")
    return text.splitlines()


def test_an_os_update_lists_every_change_then_reboots_and_drains() -> None:
    old = mc("rendered-1", files=[file_entry("/etc/motd", "a"), file_entry("/etc/old", "o")],
             kernelArguments=["nosmt"], osImageURL=IMAGE_1)  # fmt: skip
    new = mc("rendered-2", files=[file_entry("/etc/motd", "b"), file_entry("/etc/new", "n")],
             kernelArguments=["mitigations=off"], osImageURL=IMAGE_2,
             units=[{"name": "x.service", "contents": "[Unit]\n"}])  # fmt: skip
    assert lines(describe_plan(make_plan(old, new))) == [
        "Update rendered-1 -> rendered-2",
        "Reconcilable: yes",
        "Changes: osUpdate, kargs, files, units",
        "Files:",
        "  + /etc/new",
        "  ~ /etc/motd",
        "  - /etc/old",
        "Units:",
        "  + x.service",
        "OS: Upgrading OS; Changing kernel arguments",
        "Kernel arguments: rpm-ostree kargs --delete-if-present=nosmt --append=mitigations=off",
        "Policies: the default cluster policies",
        "Why:",
        "  osImageURL changed: OS changes always reboot -> Reboot",
        "  kernel arguments changed: OS changes always reboot -> Reboot",
        "Actions: Reboot",
        "Drain: yes (the update reboots the node)",
        "Reboot: yes",
        "Reboot kind: full (the kernel or its command line changes (osUpdate, kargs))",
        "Cost: reboot",
    ]


def test_the_force_file_is_said_and_is_the_only_reason() -> None:
    old, new = mc("rendered-1"), mc("rendered-2", files=[file_entry("/etc/motd", "b")])
    out = lines(describe_plan(make_plan(old, new, force=True)))
    assert out[3] == "Force file present: validation skipped, OS update and reboot forced"
    assert out[out.index("Why:") + 1 :] == [
        "  force file: the force file forces a reboot -> Reboot",
        "Actions: Reboot",
        "Drain: yes (the update reboots the node)",
        "Reboot: yes",
        "Reboot kind: full (the kernel or its command line changes (osUpdate))",
        "Cost: reboot",
    ]
    assert not any(line.startswith("Force") for line in lines(describe_plan(make_plan(old, new))))


def test_the_legacy_table_is_named_as_the_policy_source() -> None:
    old, new = mc("rendered-1"), mc("rendered-2", units=[{"name": "x.service", "contents": "a"}])
    out = lines(describe_plan(make_plan(old, new, legacy=True)))
    assert "Policies: legacy action table" in out
    assert "  systemd units: unit changes reboot (legacy table) -> Reboot" in out


def test_nothing_to_do_says_none_everywhere() -> None:
    same = mc("rendered-1", files=[file_entry("/etc/motd", "a")])
    assert lines(describe_plan(make_plan(same, same))) == [
        "Update rendered-1 -> rendered-1",
        "Reconcilable: yes",
        "Changes: none",
        "Policies: the default cluster policies",
        "Why:",
        "  no changes in files, units or SSH keys: no node disruption policies are in effect "
        "-> None",
        "Actions: None",
        "Drain: no (no action needs a drain)",
        "Reboot: no",
        "Cost: none",
    ]


def test_a_crio_reload_neither_drains_nor_reboots() -> None:
    old = mc("rendered-1", files=[file_entry("/etc/containers/policy.json", "{}")])
    new = mc("rendered-2", files=[file_entry("/etc/containers/policy.json", '{"a": 1}')])
    out = lines(describe_plan(make_plan(old, new)))
    assert out[2:5] == ["Changes: files", "Files:", "  ~ /etc/containers/policy.json"]
    assert out[-5:] == [
        "  file /etc/containers/policy.json: default policy for /etc/containers/policy.json "
        "-> Reload crio.service",
        "Actions: Reload crio.service",
        "Drain: no (no action needs a drain)",
        "Reboot: no",
        "Cost: reload",
    ]


def test_the_registries_special_action_is_spelled_out() -> None:
    assert describe_action(SPECIAL) == (
        "Special (reload crio.service; drain only if the registries change is unsafe)"
    )
    assert describe_action(reload("crio.service")) == "Reload crio.service"
    old = mc("rendered-1", files=[file_entry(REG, REGISTRIES)])
    new = mc("rendered-2", files=[file_entry(REG, REGISTRIES + "short-name-mode = 'enforcing'\n")])
    out = lines(describe_plan(make_plan(old, new)))
    special = "Special (reload crio.service; drain only if the registries change is unsafe)"
    assert f"  file {REG}: default policy for {REG} -> {special}" in out
    assert f"Actions: {special}" in out


def test_an_unreconcilable_update_says_only_why_in_upstreams_words() -> None:
    old = mc("rendered-1")
    new = mc("rendered-3", storage={"disks": [{"device": "/dev/sdb"}]})
    assert lines(describe_plan(make_plan(old, new))) == [
        "Update rendered-1 -> rendered-3",
        "Reconcilable: no",
        "Reason: can't reconcile config rendered-1 with rendered-3: configs rendered-1, "
        'rendered-3 are not reconcilable: new machineconfig "rendered-1" is not reconcilable '
        'against "rendered-3": ignition disks section contains changes',
    ]


def test_file_names_with_control_characters_are_escaped() -> None:
    old, new = mc("rendered-1"), mc("rendered-2", files=[file_entry("/etc/a\x1b[2Jb", "x")])
    out = describe_plan(make_plan(old, new))
    assert "\x1b" not in out
    assert "  + /etc/a\\x1b[2Jb" in lines(out)
