"""Diff categories (upstream TestMachineConfigDiff) and file/unit change sets."""

from __future__ import annotations

from typing import Any

import pytest

from mcd.model.planning.diff import diff_machine_configs, file_changes, unit_changes
from tests.builders import file_entry, mc

KEY_A = "ssh-ed25519 AAAAkeyA"
CASES: list[tuple[str, dict[str, Any], dict[str, Any], list[str]]] = [
    ("empty vs empty", {}, {}, []),
    ("osImageURL change", {"osImageURL": "a"}, {"osImageURL": "b"}, ["osUpdate"]),
    ("nil vs [] kargs are equal", {}, {"kernelArguments": []}, []),
    ("kargs change", {"kernelArguments": ["a"]}, {"kernelArguments": ["b"]}, ["kargs"]),
    ("kargs order matters", {"kernelArguments": ["a", "b"]}, {"kernelArguments": ["b", "a"]},
     ["kargs"]),
    ("fips", {"fips": False}, {"fips": True}, ["fips"]),
    ("SSH keys - empty MC", {}, {"users": [{"name": "core", "sshAuthorizedKeys": [KEY_A]}]},
     ["passwd"]),
    ("SSH keys - new key", {"users": [{"name": "core", "sshAuthorizedKeys": [KEY_A]}]},
     {"users": [{"name": "core", "sshAuthorizedKeys": [KEY_A, "k2"]}]}, ["passwd"]),
    ("password hash - empty MC", {}, {"users": [{"name": "core", "passwordHash": "$6$x"}]},
     ["passwd"]),
    ("password change", {"users": [{"name": "core", "passwordHash": "$6$x"}]},
     {"users": [{"name": "core", "passwordHash": "$6$y"}]}, ["passwd"]),
    ("file added", {}, {"files": [file_entry("/etc/a", "x")]}, ["files"]),
    ("unit added", {}, {"units": [{"name": "a.service", "contents": "x"}]}, ["units"]),
    ("kernel type default and empty are equal", {"kernelType": ""}, {"kernelType": "default"}, []),
    ("kernel type", {}, {"kernelType": "realtime"}, ["kernelType"]),
    ("extensions nil vs []", {}, {"extensions": []}, []),
    ("extensions", {}, {"extensions": ["usbguard"]}, ["extensions"]),
]  # fmt: skip


@pytest.mark.parametrize(("title", "old", "new", "expected"), CASES, ids=[c[0] for c in CASES])
def test_diff_categories(
    title: str, old: dict[str, Any], new: dict[str, Any], expected: list[str]
) -> None:
    assert diff_machine_configs(mc("a", **old), mc("b", **new)).categories() == expected


def test_force_marks_an_os_update() -> None:
    d = diff_machine_configs(mc("a"), mc("a"), force=True)
    assert d.categories() == ["osUpdate"]
    assert d.os_changes_string() == "Upgrading OS"


def test_file_and_unit_change_sets() -> None:
    old = mc(
        files=[file_entry("/etc/keep", "k"), file_entry("/etc/mode", "m"), file_entry("/etc/gone")],
        units=[{"name": "a.service", "contents": "1"}, {"name": "b.service"}],
    )
    new = mc(
        files=[
            file_entry("/etc/keep", "k"),
            file_entry("/etc/mode", "m", mode=0o600),
            file_entry("/etc/new"),
        ],
        units=[{"name": "a.service", "contents": "2"}, {"name": "c.service"}],
    )
    f = file_changes(old, new)
    assert (f.added, f.changed, f.removed) == (("/etc/new",), ("/etc/mode",), ("/etc/gone",))
    u = unit_changes(old, new)
    assert (u.added, u.changed, u.removed) == (("c.service",), ("a.service",), ("b.service",))


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/etc/systemd/system/kubelet.service.d/10-mco.conf", True),
        ("/etc/systemd/system/kubelet.service.d/20-other.conf", False),
        ("/etc/systemd/system/crio.service.d/10-mco.conf", False),
        ("/etc/systemd/system/kubelet.service", False),
        ("/etc/kubelet.service.d/10-mco.conf", False),
        ("/etc/systemd/system/kubelet.service.d/sub/10-mco.conf", False),
    ],
)
def test_dropin_check(path: str, expected: bool) -> None:
    """Upstream TestDropinCheck: only dropins the config defines count."""
    cfg = mc(
        units=[{"name": "kubelet.service", "dropins": [{"name": "10-mco.conf", "contents": "x"}]}]
    )
    assert cfg.ignition.is_dropin_path(path) is expected
