"""The boot loader update on the agent's real OS pivot (upstream ``runBootloaderUpdate``, its
``bootupctl update`` from the new image and, when that fails, the manual EFI copy
``runBootupdFallback``), with stand-ins for the host tools on the agent's PATH
(``tests/fakes/bootupd_tools.py``: mokutil says Secure Boot is on, bootloader-update.service
and the image's ``bootupctl update`` fail) and the rpm-ostree stand-in for the rebase. The EFI
files land on the ESP mounted at the node root's ``/boot/efi`` (a temp dir: the stand-in
``mount`` mounts nothing); a failed copy is a warning and the pivot goes on."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from tests.e2e.conftest import NodeFactory
from tests.e2e.harness import BIN, IMAGE_B, AgentNode
from tests.e2e.scenarios import boot_on, update_to
from tests.fakes import bootupd_tools
from tests.fakes.kubecluster import TestCluster

ESP, BOOT = "/dev/vda2", "/dev/vda3"
SHIM = b"shim signed with the new keys\n"


def _node(make_node: NodeFactory, tmp_path: Path, **config: Any) -> tuple[AgentNode, Path]:
    """A CoreOS node with bootupctl, an ESP holding an old shim and a leftover of a failed
    bootupctl, the image's EFI tree, and the stand-ins; returns the node and their state."""
    node = make_node(fake_systemd=True)
    (node.root / "usr/bin").mkdir(parents=True, exist_ok=True)
    (node.root / "usr/bin/bootupctl").write_text("#!/bin/sh\n")
    (node.root / "tmp").mkdir(exist_ok=True)
    image = tmp_path / "image"
    (image / "usr/lib/bootupd/updates/EFI/redhat").mkdir(parents=True)
    (image / "usr/lib/bootupd/updates/EFI/redhat/shimx64.efi").write_bytes(SHIM)
    (image / "usr/lib/bootupd/updates/EFI/BOOT").mkdir()
    (image / "usr/lib/bootupd/updates/EFI/BOOT/BOOTX64.EFI").write_bytes(b"fallback\n")
    state, bin_dir = tmp_path / "bootupd", tmp_path / "bootupd-bin"
    answers = {"service_fails": True, "bootupctl_fails": True, "image_tree": str(image),
               "lsblk": bootupd_tools.single_disk(ESP, BOOT), "boot_source": BOOT, **config}  # fmt: skip
    bootupd_tools.install(bin_dir, state, answers)
    node.base_env.update(
        PATH=f"{bin_dir}:{BIN}:{os.environ['PATH']}", MCD_FAKE_BOOTUPD_DIR=str(state)
    )
    return node, state


def _pivot(node: AgentNode, cluster: TestCluster, state: Path) -> None:
    """Boot, then an update to IMAGE_B: the agent updates the boot loader, rebases, reboots."""
    boot_on(node, cluster)
    efi = node.root / "boot/efi/EFI"
    shutil.rmtree(efi.parent, ignore_errors=True)  # as the node's ESP was before this update
    (efi / "redhat").mkdir(parents=True)
    (efi / "redhat/shimx64.efi").write_bytes(b"old shim\n")
    (efi / ".btmp.redhat").mkdir()
    (efi / ".btmp.redhat/grubx64.efi").write_bytes(b"half written\n")
    (state / "calls.jsonl").unlink(missing_ok=True)  # this update's calls only
    new = update_to(node, cluster, image=IMAGE_B)
    node.wait_reboot()
    node.reboot()
    node.wait_state("Done", new)
    booted = next(d for d in node.rpm()["deployments"] if d["booted"])
    assert booted["container-image-reference"].endswith(IMAGE_B), "the pivot went on"


def _calls(state: Path) -> list[list[str]]:
    """The stand-ins' calls, but the agent's other systemctl calls (its start's failed units)."""
    return [c for c in bootupd_tools.calls(state)
            if c[0] != "systemctl" or c[1:] == ["start", "bootloader-update.service"]]  # fmt: skip


def test_a_failed_bootupctl_update_falls_back_to_copying_the_images_efi_files(
    make_node: NodeFactory, kube_cluster: TestCluster, tmp_path: Path
) -> None:
    node, state = _node(make_node, tmp_path)
    _pivot(node, kube_cluster, state)
    efi = node.root / "boot/efi"
    calls = [c for c in _calls(state) if c[0] != "systemd-run"]
    tmp = next(c for c in calls if c[:2] == ["podman", "cp"])[3]
    assert Path(tmp).parent == node.root / "tmp" and Path(tmp).name.startswith("bootupd-efi-")
    cid = bootupd_tools.CONTAINER_ID
    assert calls[:3] == [
        ["mokutil", "--sb-state"],
        ["systemctl", "start", "bootloader-update.service"],
        ["podman", "image", "exists", IMAGE_B],
    ]
    assert calls[3][:2] == ["podman", "pull"] and calls[3][-1] == IMAGE_B
    assert calls[4][:2] == ["podman", "run"] and calls[4][-3:] == [IMAGE_B, "bootupctl", "update"]
    assert calls[5:] == [
        ["podman", "create", "--name", "bootupd-efi-extract", IMAGE_B],
        ["podman", "cp", f"{cid}:/usr/lib/bootupd/updates/EFI", tmp],
        ["lsblk", "--paths", "--json", "-o", "NAME,PARTTYPE,FSTYPE"],
        ["findmnt", "-n", "-o", "SOURCE", "--target", str(node.root / "boot")],
        ["mount", ESP, str(efi)],
        ["umount", str(efi)],
        ["sync"],
        ["podman", "rm", "-f", cid],
    ]
    assert (efi / "EFI/redhat/shimx64.efi").read_bytes() == SHIM
    assert (efi / "EFI/BOOT/BOOTX64.EFI").read_bytes() == b"fallback\n"
    assert not (efi / "EFI/.btmp.redhat").exists(), "a failed bootupctl's leftover is removed"
    assert list((node.root / "tmp").iterdir()) == [], "the extracted files are removed"
    log = node.log()
    assert "bootupctl update failed (" in log and "falling back to manual EFI copy" in log
    assert f"bootupd fallback: copying EFI files to {ESP}" in log
    assert "bootupd fallback: removing leftover /boot/efi/EFI/.btmp.redhat" in log
    assert f"bootupd fallback [After {ESP}]:" in log and "/boot/efi/EFI/redhat/shimx64.efi" in log
    assert "bootupctl: fallback EFI copy completed" in log
    assert "bootloader update failed" not in log


def test_a_failed_copy_is_a_warning_and_the_pivot_goes_on(
    make_node: NodeFactory, kube_cluster: TestCluster, tmp_path: Path
) -> None:
    no_esp = bootupd_tools.single_disk(ESP, BOOT)
    no_esp["blockdevices"][0]["children"][1]["parttype"] = "ebd0a0a2-b9e5-4433-87c0-68b6b72699c7"
    node, state = _node(make_node, tmp_path, lsblk=no_esp)
    _pivot(node, kube_cluster, state)
    calls = _calls(state)
    assert not [c for c in calls if c[0] in ("mount", "umount", "sync")], "no ESP: no mount"
    assert calls[-1] == ["podman", "rm", "-f", bootupd_tools.CONTAINER_ID]
    assert (node.root / "boot/efi/EFI/redhat/shimx64.efi").read_bytes() == b"old shim\n"
    assert list((node.root / "tmp").iterdir()) == []
    assert (
        "bootloader update failed: bootupctl fallback EFI copy: no EFI System Partition found"
        in node.log()
    )
