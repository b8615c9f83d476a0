"""Irreconcilable overrides and the MachineConfigNode's irreconcilableChanges (issue 32).

Cases follow upstream's ``irreconcilable_diff_reporter_test.go`` and
``reconcile_test.go``: a storage change the cluster allows is reconcilable, the report
names each changed leaf with its new value, files and units are never reported.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcd.model.machineconfig import machine_config_from_object
from mcd.model.planning.overrides import MAX_CHANGES, overrides_from
from mcd.model.planning.overrides import irreconcilable_changes as changes_of
from mcd.model.planning.plan import make_plan
from tests.builders import mc_doc


def cfg(**storage: Any) -> dict[str, Any]:
    return {"ignition": {"version": "3.4.0"}, "storage": storage}


def irreconcilable_changes(base: dict[str, Any], target: dict[str, Any]) -> list[dict[str, str]]:
    as_mc = [machine_config_from_object({"kind": "MachineConfig", "metadata": {"name": n},
                                         "spec": {"config": c}})
             for n, c in (("base", base), ("target", target))]  # fmt: skip
    return changes_of(*as_mc)


def mcop(*storage: str) -> dict[str, Any]:
    spec: dict[str, Any] = {"irreconcilableValidationOverrides": {"storage": list(storage)}}
    return {"kind": "MachineConfiguration", "metadata": {"name": "cluster"}, "spec": spec}


def test_overrides_are_read_from_the_machineconfiguration() -> None:
    o = overrides_from(mcop("Disks", "Raid"))
    assert (o.storage.disks, o.storage.filesystems, o.storage.raid) == (True, False, True)
    assert overrides_from({"spec": {}}) == overrides_from(None) == overrides_from(mcop())
    assert not overrides_from(mcop("Bogus")).storage.disks


@pytest.mark.parametrize(
    ("section", "override", "value"),
    [("disks", "Disks", [{"device": "/dev/sdb"}]),
     ("filesystems", "FileSystems", [{"device": "/dev/sdb1", "format": "xfs"}]),
     ("raid", "Raid", [{"name": "md0", "level": "raid1", "devices": ["/dev/sda", "/dev/sdb"]}])],
)  # fmt: skip
def test_a_storage_change_is_reconcilable_only_when_overridden(
    section: str, override: str, value: list[Any]
) -> None:
    old = machine_config_from_object(mc_doc("rendered-worker-1"))
    new = machine_config_from_object(mc_doc("rendered-worker-2", storage={section: value}))
    refused = make_plan(old, new)
    assert not refused.reconcilable
    assert f"ignition {section} section contains changes" in refused.reason
    allowed = make_plan(old, new, overrides=overrides_from(mcop(override)))
    assert allowed.reconcilable, allowed.reason
    other = "Raid" if override != "Raid" else "Disks"
    assert not make_plan(old, new, overrides=overrides_from(mcop(other))).reconcilable


def test_one_disk_device_change_names_the_leaf_and_its_new_value() -> None:
    base = cfg(disks=[{"device": "/dev/sda", "wipeTable": True}])
    target = cfg(disks=[{"device": "/dev/sdb", "wipeTable": True}])
    assert irreconcilable_changes(base, target) == [
        {"fieldPath": "spec.config.storage.disks[0].device",
         "diff": '- "/dev/sda"\n+ "/dev/sdb"\n'},
    ]  # fmt: skip


def test_several_changes_in_upstreams_order() -> None:
    base = cfg(disks=[{"device": "/dev/sda", "wipeTable": True}],
               filesystems=[{"device": "/dev/sda1", "format": "ext4"}])  # fmt: skip
    target = cfg(disks=[{"device": "/dev/sdb", "wipeTable": False}],
                 filesystems=[{"device": "/dev/sdb1", "format": "xfs"}])  # fmt: skip
    report = irreconcilable_changes(base, target)
    assert [r["fieldPath"] for r in report] == [
        "spec.config.storage.disks[0].device",
        "spec.config.storage.disks[0].wipeTable",
        "spec.config.storage.filesystems[0].device",
        "spec.config.storage.filesystems[0].format",
    ]
    assert [r["diff"].splitlines()[-1] for r in report] == [
        '+ "/dev/sdb"', "+ false", '+ "/dev/sdb1"', '+ "xfs"']  # fmt: skip


def test_files_and_units_are_never_reported() -> None:
    base = cfg(disks=[{"device": "/dev/sda"}],
               files=[{"path": "/etc/a", "contents": {"source": "data:,a"}}])  # fmt: skip
    target = {**cfg(disks=[{"device": "/dev/sda"}],
                    files=[{"path": "/etc/b", "contents": {"source": "data:,b"}}]),
              "systemd": {"units": [{"name": "x.service", "enabled": True}]}}  # fmt: skip
    assert irreconcilable_changes(base, target) == []


def test_an_added_disk_and_a_spec_2_base() -> None:
    base = {"ignition": {"version": "2.2.0"}}
    target = cfg(disks=[{"device": "/dev/sdb"}])
    assert irreconcilable_changes(base, target) == [
        {"fieldPath": "spec.config.storage", "diff": '+ {"disks":[{"device":"/dev/sdb"}]}\n'}
    ]
    grown = cfg(disks=[{"device": "/dev/sda"}, {"device": "/dev/sdb"}])
    assert irreconcilable_changes(cfg(disks=[{"device": "/dev/sda"}]), grown) == [
        {"fieldPath": "spec.config.storage.disks[1]",
         "diff": '  {"device":"/dev/sda"}\n+ {"device":"/dev/sdb"}\n]\n'},
    ]  # fmt: skip


devices = st.lists(st.fixed_dictionaries({"device": st.sampled_from(["/dev/sda", "/dev/sdb"]),
                                          "wipeTable": st.booleans()}), max_size=4)  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(devices, devices)
def test_no_change_no_report_and_every_path_is_under_storage(a: list[Any], b: list[Any]) -> None:
    assert irreconcilable_changes(cfg(disks=a), cfg(disks=a)) == []
    report = irreconcilable_changes(cfg(disks=a), cfg(disks=b))
    assert bool(report) == (a != b)
    assert all(r["fieldPath"].startswith("spec.config.storage") for r in report)


def test_the_report_keeps_within_the_crds_limits() -> None:
    many = cfg(disks=[{"device": f"/dev/vd{i}", "wipeTable": True} for i in range(40)])
    fewer = cfg(disks=[{"device": f"/dev/xd{i}", "wipeTable": False} for i in range(40)])
    report = irreconcilable_changes(many, fewer)
    assert len(report) == MAX_CHANGES
    assert len({r["fieldPath"] for r in report}) == len(report)
    deep = cfg(filesystems=[{"device": "/dev/sda1", "format": "xfs",
                             "mountOptions": ["a" * 5000]}])  # fmt: skip
    (entry,) = irreconcilable_changes(cfg(), deep)
    assert len(entry["fieldPath"]) <= 70 and len(entry["diff"]) <= 4096
