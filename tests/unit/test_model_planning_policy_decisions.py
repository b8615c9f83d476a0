"""The plan's decisions under node disruption policies (model/planning/actions): each
changed file, unit and the SSH keys with the policy that decided it, in the words
``mcd plan`` prints, and why the node is drained or not."""

from __future__ import annotations

from typing import Any

from mcd.model.disruption.policy import (
    DEFAULT_POLICIES,
    DRAIN,
    NONE,
    REBOOT,
    DisruptionPolicies,
    FilePolicy,
    UnitPolicy,
    reload,
    restart,
)
from mcd.model.planning.plan import make_plan
from tests.builders import file_entry, mc

POLICIES = DisruptionPolicies(
    files=(
        FilePolicy("/etc/app", (restart("app.service"),), "user"),
        FilePolicy("/etc/app/exact.conf", (reload("app.service"),), "user"),
        FilePolicy("/etc/drain.conf", (DRAIN,), "user"),
    ),
    units=(UnitPolicy("known.service", (restart("known.service"),), "user"),),
    sshkey=(NONE,),
    sshkey_origin="user",
)


def decisions(plan: Any) -> list[tuple[str, str, tuple[Any, ...]]]:
    return [(d.subject, d.rule, d.actions) for d in plan.decisions]


def test_each_file_names_the_policy_that_decided_it_exact_or_by_directory() -> None:
    new = mc("b", files=[file_entry("/etc/app/exact.conf", "x"), file_entry("/etc/app/sub/y", "y"),
                         file_entry("/etc/other", "z")])  # fmt: skip
    plan = make_plan(mc("a"), new, POLICIES)
    assert sorted(decisions(plan)) == [
        ("file /etc/app/exact.conf", "user policy for /etc/app/exact.conf",
         (reload("app.service"),)),
        ("file /etc/app/sub/y", "user policy for directory /etc/app", (restart("app.service"),)),
        ("file /etc/other", "no policy matches", (REBOOT,)),
    ]  # fmt: skip
    assert plan.actions == (REBOOT,)
    assert (plan.drain, plan.drain_reason) == (True, "the update reboots the node")


def test_each_unit_names_its_policy_or_reboots() -> None:
    units = [{"name": "known.service", "contents": "[Unit]\n"},
             {"name": "other.service", "contents": "[Unit]\n"}]  # fmt: skip
    plan = make_plan(mc("a"), mc("b", units=units), POLICIES)
    assert sorted(decisions(plan)) == [
        ("unit known.service", "user policy for unit known.service", (restart("known.service"),)),
        ("unit other.service", "no policy matches", (REBOOT,)),
    ]
    only_known = make_plan(mc("a"), mc("b", units=units[:1]), POLICIES)
    assert only_known.actions == (restart("known.service"),)
    assert (only_known.drain, only_known.drain_reason) == (False, "no action needs a drain")


def test_ssh_keys_follow_the_sshkey_policy_or_need_nothing() -> None:
    users = [{"name": "core", "sshAuthorizedKeys": ["ssh-ed25519 AAAA k"]}]
    plan = make_plan(mc("a"), mc("b", users=users), POLICIES)
    assert decisions(plan) == [("SSH keys / password", "user sshkey policy", (NONE,))]
    bare = make_plan(mc("a"), mc("b", users=users), DisruptionPolicies())
    assert decisions(bare) == [("SSH keys / password", "default sshkey policy", (NONE,))]


def test_a_policy_asking_for_a_drain_drains() -> None:
    plan = make_plan(mc("a"), mc("b", files=[file_entry("/etc/drain.conf", "x")]), POLICIES)
    assert plan.actions == (DRAIN,)
    assert (plan.drain, plan.drain_reason) == (True, "a policy asks for a drain")


def test_nothing_changed_in_files_units_or_keys_is_no_action() -> None:
    plan = make_plan(mc("a"), mc("b"), DEFAULT_POLICIES)
    assert decisions(plan) == [
        ("no changes in files, units or SSH keys", "no node disruption policies are in effect",
         (NONE,)),
    ]  # fmt: skip
    assert (plan.drain, plan.drain_reason) == (False, "no action needs a drain")


def test_a_unit_change_alone_is_judged_by_units_not_by_files() -> None:
    units = [{"name": "known.service", "contents": "[Unit]\n"}]
    plan = make_plan(mc("a"), mc("b", units=units), POLICIES)
    assert [d.subject for d in plan.decisions] == ["unit known.service"]
