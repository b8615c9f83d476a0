"""Post-config actions: the legacy table (upstream TestCalculatePostConfigChangeAction, 14
cases), the same cases under node disruption policies, closest-path match, user policies."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from mcd.model.disruption.policy import (
    DAEMON_RELOAD,
    DEFAULT_POLICIES,
    NONE,
    REBOOT,
    SPECIAL,
    Action,
    DisruptionPolicies,
    FilePolicy,
    merge_policies,
    parse_user_policies,
    reload,
    restart,
)
from mcd.model.errors import PolicyError
from mcd.model.planning.actions import legacy_actions
from mcd.model.planning.diff import diff_machine_configs, file_changes
from mcd.model.planning.plan import Cost, make_plan
from tests.builders import file_entry, mc

ROOT = Path(__file__).resolve().parents[2]
CRIO = "crio.service"
REG = "/etc/containers/registries.conf"
PULL = "/var/lib/kubelet/config.json"
CA = "/etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt"
REG_V1 = 'unqualified-search-registries = ["a.io"]\n'
REG_V2 = 'unqualified-search-registries = ["a.io", "b.io"]\n'

# (title, old kwargs, new kwargs, legacy result, node-disruption-policy result)
CASES: list[tuple[str, dict[str, Any], dict[str, Any], tuple[Action, ...], tuple[Action, ...]]] = [
    ("random file", {}, {"files": [file_entry("/etc/random", "x")]}, (REBOOT,), (REBOOT,)),
    ("pull secret", {"files": [file_entry(PULL, "a")]}, {"files": [file_entry(PULL, "b")]},
     (NONE,), (NONE,)),
    ("ssh key", {}, {"users": [{"name": "core", "sshAuthorizedKeys": ["k"]}]}, (NONE,), (NONE,)),
    ("registries.conf", {"files": [file_entry(REG, REG_V1)]}, {"files": [file_entry(REG, REG_V2)]},
     (reload(CRIO),), (SPECIAL,)),
    ("kubelet-ca (no default policy in cluster)",
     {"files": [file_entry("/etc/kubernetes/kubelet-ca.crt", "a")]},
     {"files": [file_entry("/etc/kubernetes/kubelet-ca.crt", "b")]}, (NONE,), (REBOOT,)),
    ("registries + pull secret",
     {"files": [file_entry(REG, REG_V1), file_entry(PULL, "a")]},
     {"files": [file_entry(REG, REG_V2), file_entry(PULL, "b")]}, (reload(CRIO),), (SPECIAL,)),
    ("osImage change overrides",
     {"osImageURL": "a", "files": [file_entry(PULL, "a")]},
     {"osImageURL": "b", "files": [file_entry(PULL, "b")]}, (REBOOT,), (REBOOT,)),
    ("adding pull secret", {}, {"files": [file_entry(PULL, "a")]}, (NONE,), (NONE,)),
    ("removing registries.conf", {"files": [file_entry(REG, REG_V1)]}, {}, (reload(CRIO),),
     (SPECIAL,)),
    ("kargs change", {"kernelArguments": ["a"]}, {"kernelArguments": ["b"]}, (REBOOT,), (REBOOT,)),
    ("policy.json", {}, {"files": [file_entry("/etc/containers/policy.json", "{}")]},
     (reload(CRIO),), (reload(CRIO),)),
    ("containers-gpg.pub", {},
     {"files": [file_entry("/etc/machine-config-daemon/no-reboot/containers-gpg.pub", "k")]},
     (reload(CRIO),), (reload(CRIO),)),
    ("user CA bundle", {}, {"files": [file_entry(CA, "pem")]}, (restart(CRIO),),
     (restart("coreos-update-ca-trust.service"), restart(CRIO))),
    ("restart overrides a later reload", {"files": [file_entry(REG, REG_V1)]},
     {"files": [file_entry(CA, "pem"), file_entry(REG, REG_V2)]}, (restart(CRIO),),
     (SPECIAL, restart("coreos-update-ca-trust.service"), restart(CRIO))),
]  # fmt: skip


@pytest.mark.parametrize(("title", "old", "new", "legacy", "ndp"), CASES, ids=[c[0] for c in CASES])
def test_post_config_actions(
    title: str,
    old: dict[str, Any],
    new: dict[str, Any],
    legacy: tuple[Action, ...],
    ndp: tuple[Action, ...],
) -> None:
    a, b = mc("old", **old), mc("new", **new)
    legacy_result = legacy_actions(diff_machine_configs(a, b), file_changes(a, b))
    assert legacy_result.actions == legacy
    assert make_plan(a, b, legacy=True).actions == legacy
    assert make_plan(a, b).actions == ndp


def test_force_file_forces_reboot() -> None:
    plan = make_plan(mc("a"), mc("a"), force=True)
    assert plan.actions == (REBOOT,)
    assert plan.reboot and plan.drain
    assert plan.decisions[0].subject == "force file"


def test_same_config_needs_nothing() -> None:
    plan = make_plan(mc("a"), mc("a"))
    assert plan.actions == (NONE,)
    assert not plan.drain and not plan.reboot
    assert plan.cost is Cost.NONE


POLICIES = DisruptionPolicies(
    files=(
        FilePolicy("/etc/a", (NONE,)),
        FilePolicy("/etc/a/b", (reload(CRIO),)),
        FilePolicy("/etc/a/b/c.conf", (DAEMON_RELOAD,)),
        FilePolicy("/etc/foo", (NONE,)),
    )
)


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/usr/x", None),  # no match
        ("/etc/a/b/c.conf", "/etc/a/b/c.conf"),  # exact beats parents
        ("/etc/a/b/d.conf", "/etc/a/b"),  # closest parent directory wins
        ("/etc/a/x", "/etc/a"),
        ("/etc/foobar", None),  # partial-name prefixes don't match
        ("/etc/foo", "/etc/foo"),
    ],
)
def test_closest_file_policy(path: str, expected: str | None) -> None:
    found = POLICIES.closest_file_policy(path)
    assert (found.path if found else None) == expected


def test_user_policies_merge_over_defaults() -> None:
    doc = yaml.safe_load((ROOT / "examples/machineconfiguration.yaml").read_text())
    merged = merge_policies(DEFAULT_POLICIES, parse_user_policies(doc))
    chrony = merged.closest_file_policy("/etc/chrony.conf")
    assert chrony is not None and chrony.actions == (restart("chronyd.service"),)
    unit = merged.unit_policy("hello.service")
    assert unit is not None and unit.actions == (DAEMON_RELOAD, restart("hello.service"))
    assert merged.sshkey == (NONE,)
    # A user entry with a default's path replaces it.
    override = parse_user_policies(
        {"nodeDisruptionPolicy": {"files": [{"path": REG, "actions": [{"type": "Reboot"}]}]}}
    )
    merged = merge_policies(DEFAULT_POLICIES, override)
    assert merged.closest_file_policy(REG).actions == (REBOOT,)  # type: ignore[union-attr]
    assert len(merged.files) == len(DEFAULT_POLICIES.files)


def test_policy_changes_the_plan() -> None:
    doc = yaml.safe_load((ROOT / "examples/machineconfiguration.yaml").read_text())
    policies = merge_policies(DEFAULT_POLICIES, parse_user_policies(doc))
    old = mc("a", files=[file_entry("/etc/chrony.conf", "pool a")])
    new = mc("b", files=[file_entry("/etc/chrony.conf", "pool b")])
    assert make_plan(old, new).actions == (REBOOT,)
    plan = make_plan(old, new, policies)
    assert plan.actions == (restart("chronyd.service"),)
    assert not plan.drain and plan.cost is Cost.RESTART
    assert plan.decisions[0].rule == "user policy for /etc/chrony.conf"
    assert plan.policy_source.startswith("spec.nodeDisruptionPolicy merged over")


@pytest.mark.parametrize(
    ("actions", "message"),
    [
        ([{"type": "Explode"}], 'unknown action type "Explode"'),
        ([{"type": "Reload"}], "Reload requires reload.serviceName"),
        (
            [{"type": "Restart", "restart": {"serviceName": "../x"}}],
            "Invalid ${SERVICETYPE} in service name",
        ),
        (
            [{"type": "Restart", "restart": {"serviceName": "a/b.service"}}],
            "Invalid ${NAME} in service name",
        ),
        ([{"type": "Reboot"}, {"type": "Drain"}], "Reboot action can only be specified standalone"),
        ([{"type": "None"}, {"type": "Drain"}], "None action can only be specified standalone"),
        ([{"type": "Special"}], 'unknown action type "Special"'),
        ([], "at least one action is required"),
    ],
)
def test_bad_user_policies(actions: list[dict[str, Any]], message: str) -> None:
    with pytest.raises(PolicyError, match=re.escape(message)):
        parse_user_policies(
            {"spec": {"nodeDisruptionPolicy": {"files": [{"path": "/etc/x", "actions": actions}]}}}
        )


# Upstream FindClosestFilePolicyPathMatch + IsSubdirectory, case by case.
@pytest.mark.parametrize(
    ("policy_path", "path", "matches"),
    [
        ("/", "/etc/foo", False),  # Clean("/") + "/" is "//": a policy for / matches nothing
        ("/", "/", True),  # ... but the exact path
        ("/etc/", "/etc/foo", True),  # a trailing slash is cleaned away
        ("/etc/foo/", "/etc/foo", False),  # exact match compares the raw strings
        ("/etc//a", "/etc/a/b", True),  # Clean folds the double slash
        ("etc", "/etc/foo", False),  # a relative policy path (the CRD allows it) never matches
        ("/etc/a", "/etc/a/../b", False),  # the diff path is cleaned too
    ],
)
def test_closest_file_policy_as_upstream(policy_path: str, path: str, matches: bool) -> None:
    policies = DisruptionPolicies(files=(FilePolicy(policy_path, (NONE,)),))
    assert (policies.closest_file_policy(path) is not None) is matches


def test_policy_for_root_does_not_make_everything_rebootless() -> None:
    user = parse_user_policies(
        {"nodeDisruptionPolicy": {"files": [{"path": "/", "actions": [{"type": "None"}]}]}}
    )
    policies = merge_policies(DEFAULT_POLICIES, user)
    old = mc("a", files=[file_entry("/etc/chrony.conf", "pool a")])
    new = mc("b", files=[file_entry("/etc/chrony.conf", "pool b")])
    plan = make_plan(old, new, policies)
    assert plan.actions == (REBOOT,)
    assert plan.decisions[0].rule == "no policy matches"


def test_merge_keeps_duplicate_user_entries_first_wins() -> None:
    """MergeClusterPolicies appends every non-default entry; the first of equal length wins."""
    user = parse_user_policies({"nodeDisruptionPolicy": {"files": [
        {"path": "/etc/x", "actions": [{"type": "None"}]},
        {"path": "/etc/x", "actions": [{"type": "Reboot"}]},
    ]}})  # fmt: skip
    merged = merge_policies(DEFAULT_POLICIES, user)
    assert len(merged.files) == len(DEFAULT_POLICIES.files) + 2
    assert merged.closest_file_policy("/etc/x").actions == (NONE,)  # type: ignore[union-attr]
