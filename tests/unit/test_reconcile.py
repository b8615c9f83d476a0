"""Reconcilability rules with the upstream texts (reference 2.2, TestReconcilableDiff)."""

from __future__ import annotations

from typing import Any

import pytest

from mcd.model.errors import ConfigError, UnreconcilableError
from mcd.model.planning.plan import make_plan
from mcd.model.planning.reconcile import Overrides, StorageOverrides, check_reconcilable
from tests.builders import file_entry, mc

DISK = {"device": "/dev/sdb", "partitions": [{"label": "data"}]}
CORE = {"name": "core", "sshAuthorizedKeys": ["ssh-ed25519 AAAA"]}

UNRECONCILABLE: list[tuple[str, dict[str, Any], dict[str, Any], str]] = [
    ("disks", {}, {"storage": {"disks": [DISK]}}, "ignition disks section contains changes"),
    ("filesystems", {}, {"storage": {"filesystems": [{"device": "/dev/sdb", "format": "xfs"}]}},
     "ignition filesystems section contains changes"),
    ("raid", {}, {"storage": {"raid": [{"name": "md0", "level": "raid1", "devices": ["/dev/a"]}]}},
     "ignition raid section contains changes"),
    ("directories", {}, {"storage": {"directories": [{"path": "/var/x"}]}},
     "ignition directories section contains changes"),
    ("links added", {}, {"storage": {"links": [{"path": "/etc/l", "target": "/etc/t"}]}},
     "ignition links section contains changes"),
    ("groups", {}, {"ignition_extra": {"passwd": {"groups": [{"name": "wheel"}]}}},
     "ignition Passwd Groups section contains changes"),
    ("non-core user", {}, {"users": [{"name": "admin", "sshAuthorizedKeys": ["k"]}]},
     "ignition passwd user section contains unsupported changes: non-core user"),
    ("core without keys or hash", {}, {"users": [{"name": "core"}]},
     "ignition passwd user section contains unsupported changes: user must be core and have 1 "
     "or more sshKeys"),
    ("core with other fields", {}, {"users": [{**CORE, "shell": "/bin/zsh"}]},
     "SSH keys and password hash are not reconcilable"),
    ("ignition kargs", {}, {"version": "3.3.0",
                            "ignition_extra": {"kernelArguments": {"shouldExist": ["nosmt"]}}},
     "ignition kargs section contains changes"),
    ("append", {}, {"files": [{"path": "/etc/a", "append": [{"source": "data:,x"}]}]},
     "ignition file /etc/a includes append"),
    ("force file", {}, {"files": [file_entry("/run/machine-config-daemon-force")]},
     "cannot create /run/machine-config-daemon-force via Ignition"),
    ("fips", {"fips": False}, {"fips": True},
     "detected change to FIPS flag; refusing to modify FIPS on a running cluster"),
    ("relative path", {}, {"files": [file_entry("etc/foo", "x")]},
     'validating new Ignition config from machineconfig "new" failed: '
     'spec.config.storage.files[0].path: path not absolute: "etc/foo"'),
    ("kernel type", {}, {"kernelType": "lowlatency"}, 'invalid kernelType "lowlatency"'),
    ("extensions", {}, {"extensions": ["usbguard", "bogus", "emacs"]},
     "invalid extensions found: [bogus emacs]"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("title", "old", "new", "detail"), UNRECONCILABLE, ids=[c[0] for c in UNRECONCILABLE]
)
def test_unreconcilable(title: str, old: dict[str, Any], new: dict[str, Any], detail: str) -> None:
    with pytest.raises(UnreconcilableError) as e:
        check_reconcilable(mc("old", **old), mc("new", **new))
    assert detail in e.value.detail
    passwd = title in (
        "groups",
        "non-core user",
        "core without keys or hash",
        "core with other fields",
    )
    # upstream isConfigReconcilable wraps every passwd reason
    assert e.value.detail.startswith("invalid passwd change(s): ") == passwd
    assert str(e.value) == (
        "can't reconcile config old with new: configs old, new are not reconcilable: "
        f'new machineconfig "old" is not reconcilable against "new": {e.value.detail}'
    )


RECONCILABLE: list[tuple[str, dict[str, Any], dict[str, Any], list[str]]] = [
    ("add file", {}, {"files": [file_entry("/etc/a", "x")]}, ["files"]),
    ("remove all files", {"files": [file_entry("/etc/a", "x")]}, {}, ["files"]),
    ("osImageURL", {"osImageURL": "a"}, {"osImageURL": "b"}, ["osUpdate"]),
    ("remove all links", {"storage": {"links": [{"path": "/l", "target": "/t"}]}}, {}, []),
    ("remove all users", {"users": [CORE]}, {}, ["passwd"]),
    ("luks", {}, {"storage": {"luks": [{"name": "root", "device": "/dev/sda"}]}}, []),
    ("units, kargs, kernel type, extensions",
     {}, {"units": [{"name": "a.service"}], "kernelArguments": ["nosmt"],
          "kernelType": "realtime", "extensions": ["usbguard"]},
     ["kargs", "units", "kernelType", "extensions"]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("title", "old", "new", "diff"), RECONCILABLE, ids=[c[0] for c in RECONCILABLE]
)
def test_reconcilable(
    title: str, old: dict[str, Any], new: dict[str, Any], diff: list[str]
) -> None:
    plan = make_plan(mc("old", **old), mc("new", **new))
    assert plan.reconcilable, plan.reason
    assert plan.reason == ""
    assert plan.diff.categories() == diff


def test_storage_overrides_allow_disks() -> None:
    overrides = Overrides(StorageOverrides(disks=True))
    check_reconcilable(mc("old"), mc("new", storage={"disks": [DISK]}), overrides)


def test_node_fips_is_the_truth() -> None:
    # The daemon compares the new config with the node, not with the old config.
    check_reconcilable(mc("old", fips=False), mc("new", fips=True), node_fips=True)
    with pytest.raises(UnreconcilableError, match="FIPS"):
        check_reconcilable(mc("old", fips=True), mc("new", fips=True), node_fips=False)


def test_unreconcilable_plan_has_no_actions() -> None:
    plan = make_plan(mc("old"), mc("new", storage={"disks": [DISK]}))
    assert not plan.reconcilable
    assert plan.actions == ()
    assert not plan.drain and not plan.reboot
    assert "ignition disks section contains changes" in plan.reason


def test_invalid_old_ignition_is_refused_when_diffing() -> None:
    """Upstream update() -> newMachineConfigDiff: ParseAndConvertConfig(old) validates it; the
    update fails (Degraded), before any reconcilability check."""
    old = mc("old", files=[file_entry("etc/relative", "x")])
    new = mc("new", files=[file_entry("/etc/foo", "x")])
    with pytest.raises(ConfigError) as e:
        make_plan(old, new)
    assert str(e.value) == (
        "could not calculate config diff: parsing old Ignition config failed with error: "
        'spec.config.storage.files[0].path: path not absolute: "etc/relative"'
    )


def test_invalid_new_ignition_is_degraded_not_unreconcilable() -> None:
    """Upstream newMachineConfigDiff parses the new config before reconcilable(): what
    Ignition's parser refuses fails the update (Degraded) in its words."""
    old = mc("old", files=[file_entry("/etc/foo", "x")])
    new = mc("new", files=[file_entry("/etc/../root/x", "x")], users=[{"name": "admin"}])
    with pytest.raises(ConfigError) as e:
        make_plan(old, new)
    assert not isinstance(e.value, UnreconcilableError)
    assert str(e.value) == (
        "could not calculate config diff: parsing new Ignition config failed with error: "
        "spec.config.storage.files[0].path: path contains a '..' segment: "
        '"/etc/../root/x"'
    )


def test_special_mode_bits_stay_unreconcilable_as_upstream_validate_ignition() -> None:
    """Ignition's parser takes mode 04777; upstream's ValidateIgnition (reconcilable) does not."""
    new = mc("new", files=[{**file_entry("/etc/suid", "x"), "mode": 0o4777}])
    plan = make_plan(mc("old"), new)
    assert not plan.reconcilable
    assert plan.reason.endswith(
        'validating new Ignition config from machineconfig "new" failed: '
        "spec.config.storage.files[0].mode: invalid mode 04777 for /etc/suid, cannot exceed 0777"
    )


def test_plan_takes_fips_from_the_node_as_upstream_checkFIPS() -> None:
    """checkFIPS: desired == node is fine and sets current.Spec.FIPS = node (no fips diff)."""
    plan = make_plan(mc("old", fips=False), mc("new", fips=True), node_fips=True)
    assert plan.reconcilable and "fips" not in plan.diff.categories()
    refused = make_plan(mc("old", fips=True), mc("new", fips=True), node_fips=False)
    assert not refused.reconcilable
    assert refused.reason.endswith(
        "detected change to FIPS flag; refusing to modify FIPS on a running cluster"
    )
