"""Which reboot an update costs (model/planning/rebootkind): every reason ``mcd plan`` gives
for a full reboot, and a soft one only when the kernel stays, the pool allows it and the
host's systemd has it."""

from __future__ import annotations

from typing import Any

import pytest

from mcd.model.planning.applicability import HostSupport
from mcd.model.planning.diff import diff_machine_configs
from mcd.model.planning.rebootkind import (
    NO_REBOOT,
    RebootChoice,
    RebootKind,
    choose,
    soft_reboot_allowed,
)
from tests.builders import file_entry, mc

SYSTEMD_256 = HostSupport(os="Fedora", systemd_version=256)
FILE = {"files": [file_entry("/etc/chrony.conf", "pool b")]}


def diff(**new: Any) -> Any:
    return diff_machine_configs(mc("a", files=[file_entry("/etc/chrony.conf", "pool a")]),
                                mc("b", **{**FILE, **new}))  # fmt: skip


@pytest.mark.parametrize(
    ("new", "named"),
    [
        ({"osImageURL": "quay.io/os@sha256:bb"}, "osUpdate"),
        ({"extensions": ["usbguard"]}, "extensions"),
        ({"kernelType": "realtime"}, "kernelType"),
        ({"kernelArguments": ["nosmt"]}, "kargs"),
        ({"fips": True}, "fips"),
        ({"kernelType": "realtime", "kernelArguments": ["nosmt"], "fips": True},
         "kernelType, kargs, fips"),
    ],
)  # fmt: skip
def test_a_kernel_change_reboots_fully_naming_what_changes(new: dict[str, Any], named: str) -> None:
    assert choose(True, diff(**new), SYSTEMD_256, True) == RebootChoice(
        RebootKind.FULL, f"the kernel or its command line changes ({named})"
    )


def test_each_reason_for_a_full_reboot_when_the_kernel_stays() -> None:
    d = diff()
    assert choose(False, d, SYSTEMD_256, True) == NO_REBOOT
    assert choose(True, d, SYSTEMD_256, False) == RebootChoice(
        RebootKind.FULL, "soft reboot not enabled (mcd-project.github.io/soft-reboot)"
    )
    unknown = RebootChoice(RebootKind.FULL, "the host's systemd version is not known")
    assert choose(True, d, None, True) == unknown
    assert choose(True, d, HostSupport(os="Fedora"), True) == unknown
    assert choose(True, d, HostSupport(os="RHEL", systemd_version=255), True) == RebootChoice(
        RebootKind.FULL, "systemd 255 has no soft-reboot (needs 256)"
    )
    assert choose(True, d, SYSTEMD_256, True) == RebootChoice(
        RebootKind.SOFT, "kernel, initrd and kernel arguments stay the same"
    )
    assert choose(True, d, SYSTEMD_256, True).to_json() == {
        "kind": "soft", "why": "kernel, initrd and kernel arguments stay the same"
    }  # fmt: skip


@pytest.mark.parametrize(
    ("value", "allowed"),
    [("true", True), ("True", True), (" TRUE\n", True), ("yes", False), ("", False),
     (None, False), ("false", False)],
)  # fmt: skip
def test_only_true_turns_soft_reboots_on(value: str | None, allowed: bool) -> None:
    assert soft_reboot_allowed(value) is allowed
