"""Which OS fields a node can apply, and what planning says when it cannot (issue 34)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcd.model.planning import applicability
from mcd.model.planning.applicability import (
    BOOTC,
    COREOS,
    GRUB,
    GRUBBY,
    RPM_OSTREE,
    HostSupport,
    inapplicable,
    support_from_annotation,
)
from mcd.model.planning.describe import describe_plan
from mcd.model.planning.plan import make_plan
from tests.builders import file_entry, mc


@pytest.fixture(autouse=True)
def _parse_each_annotation_afresh() -> None:
    """Short annotation values are parsed once and cached: parse them again under each test."""
    applicability._support_cached.cache_clear()


DEBIAN = HostSupport("Debian GNU/Linux 12 (bookworm)", "", GRUB, 252)
BARE_DEBIAN = HostSupport("Debian GNU/Linux 12 (bookworm)", "", "", 252)
IMAGE = "quay.io/example/os@sha256:" + "a" * 64

specs = st.fixed_dictionaries(
    {},
    optional={
        "osImageURL": st.sampled_from(["", IMAGE]),
        "kernelType": st.sampled_from(["default", "realtime"]),
        "extensions": st.sampled_from([[], ["usbguard"]]),
        "kernelArguments": st.sampled_from([[], ["nosmt"], ["nosmt", "quiet"]]),
    },
)
hosts = st.builds(
    HostSupport,
    os=st.sampled_from(["Debian GNU/Linux 12 (bookworm)", "Fedora Linux 41", "RHCOS 9.6"]),
    os_image=st.sampled_from(["", RPM_OSTREE, BOOTC]),
    kernel_arguments=st.sampled_from(["", RPM_OSTREE, GRUB, GRUBBY]),
    systemd_version=st.integers(0, 260),
)


def _changed(old: dict[str, Any], new: dict[str, Any]) -> dict[str, bool]:
    def kt(s: dict[str, Any]) -> str:
        return str(s.get("kernelType", "default"))

    return {
        "spec.osImageURL": old.get("osImageURL", "") != new.get("osImageURL", ""),
        "spec.extensions": old.get("extensions", []) != new.get("extensions", []),
        "spec.kernelType": kt(old) != kt(new),
        "spec.kernelArguments": old.get("kernelArguments", []) != new.get("kernelArguments", []),
    }


@given(specs, specs, hosts)
def test_exactly_the_changed_fields_the_host_lacks_a_tool_for_are_refused(
    old_spec: dict[str, Any], new_spec: dict[str, Any], host: HostSupport
) -> None:
    old, new = mc("rendered-1", **old_spec), mc("rendered-2", **new_spec)
    changed = _changed(old_spec, new_spec)
    can = {
        "spec.osImageURL": host.os_image in (RPM_OSTREE, BOOTC),
        "spec.extensions": host.os_image == RPM_OSTREE,
        "spec.kernelType": host.os_image == RPM_OSTREE,
        "spec.kernelArguments": host.kernel_arguments != "",
    }
    expected = [f for f in changed if changed[f] and not can[f]]
    assert [f.field for f in inapplicable(old, new, host)] == expected
    plan = make_plan(old, new, host=host)
    assert plan.reconcilable is not bool(expected)
    if expected:  # the reason names every field and the node's OS
        assert f"cannot apply rendered-2 on this node ({host.os}): " in plan.reason
        assert all(f in plan.reason for f in expected)
        assert not plan.actions  # no reboot for a change that would not be made
        assert [f.field for f in plan.inapplicable] == expected


@given(specs, specs)
def test_a_coreos_host_and_an_unknown_host_apply_everything(
    old_spec: dict[str, Any], new_spec: dict[str, Any]
) -> None:
    old, new = mc("rendered-1", **old_spec), mc("rendered-2", **new_spec)
    assert inapplicable(old, new, COREOS) == []
    assert make_plan(old, new, host=COREOS).reason == make_plan(old, new).reason


def test_the_debian_refusal_reads_as_one_line_naming_field_and_os() -> None:
    old, new = mc("rendered-1"), mc("rendered-2", kernelType="realtime")
    plan = make_plan(old, new, host=DEBIAN)
    assert plan.reason.endswith(
        "cannot apply rendered-2 on this node (Debian GNU/Linux 12 (bookworm)): spec.kernelType "
        '"realtime" needs rpm-ostree; the node has none'
    )
    text = describe_plan(plan)
    assert "Node: Debian GNU/Linux 12 (bookworm) (OS image: none; kernel arguments: grub" in text
    assert "Reconcilable: no" in text
    assert 'Not applicable: spec.kernelType: "realtime" needs rpm-ostree' in text


def test_kernel_arguments_on_debian_with_grub_are_planned_through_the_drop_in() -> None:
    old, new = mc("rendered-1", kernelArguments=["nosmt"]), mc("rendered-2", kernelArguments=["a"])
    plan = make_plan(old, new, host=DEBIAN)
    assert plan.reconcilable and plan.reboot
    assert "Kernel arguments: GRUB drop-in /etc/default/grub.d/99-mcd-kernel-arguments.cfg " \
        "then update-grub: a" in describe_plan(plan)  # fmt: skip
    refused = make_plan(old, new, host=BARE_DEBIAN)
    assert not refused.reconcilable
    assert "spec.kernelArguments needs a boot loader mcd can drive" in refused.reason


def test_the_force_file_is_no_change_of_the_os_image_on_debian() -> None:
    old = mc("rendered-1", files=[file_entry("/etc/motd", "a")])
    plan = make_plan(old, old, host=DEBIAN, force=True)
    assert plan.reconcilable and plan.reboot


def test_a_root_with_no_os_gets_its_files_and_says_what_it_skips() -> None:
    old, new = mc("rendered-1"), mc("rendered-2", osImageURL=IMAGE, kernelArguments=["nosmt"])
    plan = make_plan(old, new, host=HostSupport())
    assert plan.reconcilable
    assert (
        "Not applied: not applying spec.osImageURL, spec.kernelArguments of rendered-2: "
        "no OS under this root (no os-release)" in describe_plan(plan)
    )


@given(hosts)
def test_the_annotation_round_trips(host: HostSupport) -> None:
    assert support_from_annotation(host.annotation()) == host


@given(st.text(max_size=60) | st.builds(json.dumps, st.dictionaries(st.text(max_size=5),
                                                                     st.integers())))  # fmt: skip
def test_a_foreign_annotation_is_never_trusted(value: str) -> None:
    parsed = support_from_annotation(value)
    assert (
        parsed is None
        or parsed.annotation()
        == HostSupport(
            parsed.os, parsed.os_image, parsed.kernel_arguments, parsed.systemd_version
        ).annotation()
    )
    assert support_from_annotation('{"os": "x", "osImage": "yum"}') is None
    assert support_from_annotation('{"os": "x", "osImage": "", "kernelArguments": "lilo"}') is None


def test_arguments_grub_would_misparse_are_refused_by_the_gate_on_every_node() -> None:
    """GRUB's grub.cfg (the Debian drop-in) and BLS options lines (grubby, rpm-ostree: read
    through GRUB's blscfg) go through the same script lexer: one rule, at the gate."""
    old, new = mc("rendered-1"), mc("rendered-2", kernelArguments=["nosmt", "it's=$HOME"])
    for host in (DEBIAN, COREOS):
        plan = make_plan(old, new, host=host)
        assert not plan.reconcilable
        assert (
            'validating new Ignition config from machineconfig "rendered-2" failed: '
            'spec.kernelArguments[1]: invalid kernel argument "it\'s=$HOME": ' in plan.reason
        )
    fine = mc("rendered-3", kernelArguments=['acpi_osi="Windows 2020"', "a=b,c:d"])
    assert make_plan(old, fine, host=DEBIAN).reconcilable


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ('{"os":"Debian 12","osImage":"","kernelArguments":"grub","systemdVersion":252}',
         HostSupport("Debian 12", "", GRUB, 252)),
        ('{"os":"Fedora CoreOS 42","osImage":"bootc","kernelArguments":"grubby"}',
         HostSupport("Fedora CoreOS 42", BOOTC, GRUBBY, 0)),
        ('{"os":"RHCOS","osImage":"rpm-ostree","kernelArguments":"rpm-ostree",'
         '"systemdVersion":-4}', HostSupport("RHCOS", RPM_OSTREE, RPM_OSTREE, 0)),
        ('{"os":"' + "x" * 300 + '","osImage":"","kernelArguments":""}',
         HostSupport("x" * 200, "", "", 0)),
        ('{"os":"x","osImage":"","kernelArguments":"","systemdVersion":"256"}', None),
        ('{"os":7,"osImage":"","kernelArguments":""}', None),
        ('{"os":"x","kernelArguments":""}', None),
        ('{"os":"x","osImage":""}', None),
        ('["os"]', None),
        ("{not json", None),
        ("", None),
    ],
)  # fmt: skip
def test_each_field_of_a_published_annotation_is_read_strictly(
    value: str, expected: HostSupport | None
) -> None:
    assert support_from_annotation(value) == expected
    assert support_from_annotation(value) == expected  # a second read, from the cache
    long = value + " " * 1100  # past the cache's length: parsed afresh, same verdict
    assert support_from_annotation(long) == expected
