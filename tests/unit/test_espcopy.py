"""Upstream's manual EFI copy (``runBootupdFallback``): which ESP(s) it picks from lsblk and
the device behind ``/boot`` (``findESPDevices``: every RAID member's, the boot disk's when
several disks have one, else the one), its error texts, and a refused mount: no copy, no
umount, the container still removed. The host tools are the stand-ins of
``tests/fakes/bootupd_tools.py`` in a temp dir; nothing runs on the machine."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcd.host.bootloader.espcopy import (
    ESP_PART_TYPE,
    Device,
    FallbackError,
    esp_devices,
    parse_lsblk,
    run_fallback,
)
from mcd.host.rootfs import Root
from mcd.host.runner import Runner
from tests.fakes import bootupd_tools

LINUX = "0fc63daf-8483-4772-8e79-3d69d8477de4"


def part(name: str, esp: bool = False, fstype: str = "", *children: Device) -> Device:
    return Device(name, ESP_PART_TYPE if esp else LINUX, fstype, tuple(children))


def disk(name: str, *children: Device) -> Device:
    return Device(name, "", "", tuple(children))


def test_one_disk_its_esp() -> None:
    devices = [disk("/dev/vda", part("/dev/vda2", esp=True), part("/dev/vda3"))]
    assert esp_devices(devices, "/dev/vda3") == ["/dev/vda2"]


def test_several_disks_with_an_esp_the_boot_disks_only() -> None:
    devices = [disk("/dev/sda", part("/dev/sda1", esp=True), part("/dev/sda2")),
               disk("/dev/sdb", part("/dev/sdb1", esp=True), part("/dev/sdb3"))]  # fmt: skip
    assert esp_devices(devices, "/dev/sdb3") == ["/dev/sdb1"]
    with pytest.raises(FallbackError, match=r"^could not find ESP on boot disk containing /dev/x$"):
        esp_devices(devices, "/dev/x")


def test_raid_every_member_disks_esp() -> None:
    md = Device("/dev/md126", "", "xfs")
    devices = [disk("/dev/sda", part("/dev/sda1", esp=True), part("/dev/sda4", False,
                                                                  "linux_raid_member", md)),
               disk("/dev/sdb", part("/dev/sdb1", esp=True), part("/dev/sdb4", False,
                                                                  "linux_raid_member", md)),
               disk("/dev/sdc", part("/dev/sdc1", esp=True))]  # fmt: skip
    assert esp_devices(devices, "/dev/md126") == ["/dev/sda1", "/dev/sdb1"]
    bare = [disk("/dev/sda", part("/dev/sda4", False, "linux_raid_member", md))]
    with pytest.raises(FallbackError, match=r"^no ESP replicas found for RAID device /dev/md126$"):
        esp_devices(bare, "/dev/md126")


def test_no_esp_and_unreadable_lsblk_say_so() -> None:
    with pytest.raises(FallbackError, match=r"^no EFI System Partition found$"):
        esp_devices([disk("/dev/vda", part("/dev/vda1"))], "/dev/vda1")
    with pytest.raises(FallbackError, match=r"^parsing lsblk output: "):
        parse_lsblk("lsblk: command failed")
    with pytest.raises(FallbackError, match=r"^parsing lsblk output: "):
        parse_lsblk('{"blockdevices": ["sda"]}')
    parsed = parse_lsblk(json.dumps(bootupd_tools.single_disk()))
    assert esp_devices(parsed, "/dev/vda3") == ["/dev/vda2"]


NAMES = st.sampled_from([f"/dev/d{i}" for i in range(8)])
PARTS = st.builds(lambda n, e, f: Device(n, ESP_PART_TYPE if e else LINUX, f),
                  NAMES, st.booleans(), st.sampled_from(["", "vfat", "linux_raid_member"]))  # fmt: skip
DISKS = st.lists(st.builds(lambda n, c: Device(n, "", "", tuple(c)), NAMES,
                           st.lists(PARTS, max_size=4)), max_size=4)  # fmt: skip


@given(DISKS, NAMES)
def test_what_is_picked_is_always_an_esp_partition_or_an_error(
    devices: list[Device], boot: str
) -> None:
    try:
        picked = esp_devices(devices, boot)
    except FallbackError:
        return
    esps = {c.name for d in devices for c in d.children if c.parttype == ESP_PART_TYPE}
    assert picked and set(picked) <= esps


def _fallback(tmp_path: Path, **config: Any) -> tuple[Root, Path, str]:
    root = tmp_path / "root"
    (root / "tmp").mkdir(parents=True)
    (root / "boot/efi").mkdir(parents=True)
    image = tmp_path / "image"
    (image / "usr/lib/bootupd/updates/EFI/redhat").mkdir(parents=True)
    (image / "usr/lib/bootupd/updates/EFI/redhat/shimx64.efi").write_bytes(b"new\n")
    state = tmp_path / "state"
    bootupd_tools.install(tmp_path / "bin", state, {
        "image_tree": str(image), "lsblk": bootupd_tools.single_disk(),
        "boot_source": "/dev/vda3", **config})  # fmt: skip
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}",
           "MCD_FAKE_BOOTUPD_DIR": str(state)}  # fmt: skip
    error = ""
    try:
        run_fallback(Root(root), Runner(env=env), "quay.io/os@sha256:" + "e" * 64)
    except FallbackError as e:
        error = str(e)
    return Root(root), state, error


def test_the_files_land_on_the_esp_under_the_root(tmp_path: Path) -> None:
    root, state, error = _fallback(tmp_path)
    assert error == ""
    assert Path(root.host_path("/boot/efi/EFI/redhat/shimx64.efi")).read_bytes() == b"new\n"
    assert ["mount", "/dev/vda2", root.host_path("/boot/efi")] in bootupd_tools.calls(state)


def test_a_refused_mount_copies_nothing_and_still_removes_the_container(tmp_path: Path) -> None:
    root, state, error = _fallback(tmp_path, mount_fails=True)
    assert error.startswith("copying EFI to /dev/vda2: mounting /dev/vda2: error running mount")
    tools = [c[0] for c in bootupd_tools.calls(state)]
    assert "umount" not in tools and "sync" not in tools
    assert bootupd_tools.calls(state)[-1] == ["podman", "rm", "-f", bootupd_tools.CONTAINER_ID]
    assert not Path(root.host_path("/boot/efi/EFI")).exists()
    assert list(Path(root.host_path("/tmp")).iterdir()) == []
