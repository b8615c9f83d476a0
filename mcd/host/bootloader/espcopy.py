"""The manual EFI copy when ``bootupctl update`` from the new image fails (upstream
``pkg/daemon/bootupd.go``: ``runBootupdFallback``, ``findESPDevices``, ``copyEFIToESP``; old
kernels lack FAT32 ``RENAME_EXCHANGE``, which bootupctl needs).

As upstream: ``podman create --name bootupd-efi-extract IMAGE``; ``podman cp
ID:/usr/lib/bootupd/updates/EFI`` into a temporary directory (``bootupd-efi-*``); the ESP(s)
from ``lsblk --paths --json -o NAME,PARTTYPE,FSTYPE`` and the device behind ``/boot``
(``findmnt -n -o SOURCE --target /boot``): every RAID member disk's ESP when ``/boot`` is on
RAID, the boot disk's ESP when several disks carry one, else the one ESP; for each, ``mount
DEV /boot/efi``, the ``.btmp.*`` directories a failed bootupctl left under ``EFI`` removed,
the SHA-256 of every file logged before and after ``cp -rp EFI /boot/efi/``, ``umount
/boot/efi``; then ``sync``; the container removed (``podman rm -f``) and the temporary
directory too. Upstream's log lines and error texts.

Confined to the node root mcd is given: the commands run inside it (``chroot``) when it is a
mounted host carrying podman, else with every path translated into it (the temporary
directory is made under its ``/tmp``, the ESP is mounted on its ``/boot/efi``, symlinks are
resolved inside it)."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import stat
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field

from mcd.host.errors import HostError
from mcd.host.rootfs import Root
from mcd.host.runner import CommandResult, Runner

log = logging.getLogger(__name__)

ESP_PART_TYPE = "c12a7328-f81f-11d2-ba4b-00a0c93ec93b"
EFI_UPDATES = "/usr/lib/bootupd/updates/EFI"
MOUNT_POINT = "/boot/efi"
CONTAINER = "bootupd-efi-extract"
RAID_MEMBER = "linux_raid_member"


class FallbackError(HostError):
    """One step of the copy failed (upstream's words)."""


@dataclass(frozen=True)
class Device:
    """One ``lsblk`` entry: ``name`` (a path, ``--paths``), partition type GUID, filesystem."""

    name: str
    parttype: str = ""
    fstype: str = ""
    children: tuple[Device, ...] = field(default_factory=tuple)


def parse_lsblk(text: str) -> list[Device]:
    """``lsblk --json``'s ``blockdevices``; FallbackError when it is not that."""
    try:
        doc = json.loads(text)
        return [_device(d) for d in doc.get("blockdevices") or []]
    except (ValueError, AttributeError, TypeError) as e:
        raise FallbackError(f"parsing lsblk output: {e}") from e


def _device(doc: object) -> Device:
    if not isinstance(doc, dict):
        raise TypeError(f"a block device is not an object: {type(doc).__name__}")
    return Device(
        name=str(doc.get("name") or ""),
        parttype=str(doc.get("parttype") or "").lower(),
        fstype=str(doc.get("fstype") or ""),
        children=tuple(_device(c) for c in doc.get("children") or []),
    )


def esp_devices(devices: Sequence[Device], boot_dev: str) -> list[str]:
    """Upstream ``findESPDevices`` once lsblk and findmnt have answered: the ESP of every RAID
    member disk, the boot disk's ESP on a multi-ESP host, else the one ESP."""
    boot_part = _boot_partition(devices, boot_dev)
    if boot_part is not None and boot_part.fstype == RAID_MEMBER:
        esps = _raid_esps(devices, boot_dev)
        if not esps:
            raise FallbackError(f"no ESP replicas found for RAID device {boot_dev}")
        return esps
    if sum(any(_is_esp(c) for c in disk.children) for disk in devices) > 1:
        for disk in devices:
            if any(c.name == boot_dev for c in disk.children):
                found = [c.name for c in disk.children if _is_esp(c)]
                if found:
                    return found[:1]
        raise FallbackError(f"could not find ESP on boot disk containing {boot_dev}")
    for disk in devices:
        for child in disk.children:
            if _is_esp(child):
                return [child.name]
    raise FallbackError("no EFI System Partition found")


def _is_esp(device: Device) -> bool:
    return device.parttype == ESP_PART_TYPE


def _boot_partition(devices: Sequence[Device], boot_dev: str) -> Device | None:
    """The partition that is ``boot_dev`` or holds it (a RAID member holds the md device)."""
    for disk in devices:
        for child in disk.children:
            if child.name == boot_dev or any(g.name == boot_dev for g in child.children):
                return child
    return None


def _raid_esps(devices: Sequence[Device], raid_dev: str) -> list[str]:
    esps = []
    for disk in devices:
        if any(g.name == raid_dev for c in disk.children for g in c.children):
            esps += [c.name for c in disk.children if _is_esp(c)]
    return esps


class _Host:
    """Commands and paths inside the node root (:mod:`mcd.host.osupdate.extensions`'s rule)."""

    def __init__(self, root: Root, runner: Runner) -> None:
        self.root, self.runner = root, runner
        self.chrooted = root.path != "/" and root.exists("/usr/bin/podman")

    def run(self, argv: Sequence[str], check: bool = True) -> CommandResult:
        full = ["chroot", self.root.path, *argv] if self.chrooted else list(argv)
        return self.runner.run(full, check=check)

    def path(self, node_path: str) -> str:
        """A node path as the commands see it."""
        return node_path if self.chrooted else self.root.host_path(node_path)


def run_fallback(root: Root, runner: Runner, image: str) -> None:
    """Upstream ``runBootupdFallback``; raises FallbackError (or the HostError of ``sync``)."""
    host = _Host(root, runner)
    try:
        created = host.run(["podman", "create", "--name", CONTAINER, image]).stdout
    except HostError as e:
        raise FallbackError(f"creating container for EFI extraction: {e}") from e
    container = created.strip()
    try:
        try:
            efi_dir = tempfile.mkdtemp(prefix="bootupd-efi-", dir=root.host_path("/tmp"))
        except OSError as e:
            raise FallbackError(f"creating temp dir: {e}") from e
        try:
            node_dir = "/tmp/" + os.path.basename(efi_dir)
            try:
                host.run(["podman", "cp", f"{container}:{EFI_UPDATES}", host.path(node_dir)])
            except HostError as e:
                raise FallbackError(f"extracting EFI files from container: {e}") from e
            for device in _find_esp_devices(host):
                log.info("bootupd fallback: copying EFI files to %s", device)
                try:
                    _copy_efi_to_esp(host, device, node_dir + "/EFI")
                except HostError as e:
                    raise FallbackError(f"copying EFI to {device}: {e}") from e
            host.run(["sync"])
        finally:
            shutil.rmtree(efi_dir, ignore_errors=True)
    finally:
        host.run(["podman", "rm", "-f", container], check=False)


def _find_esp_devices(host: _Host) -> list[str]:
    try:
        out = host.run(["lsblk", "--paths", "--json", "-o", "NAME,PARTTYPE,FSTYPE"]).stdout
    except HostError as e:
        raise FallbackError(f"lsblk: {e}") from e
    devices = parse_lsblk(out)
    try:
        source = host.run(["findmnt", "-n", "-o", "SOURCE", "--target", host.path("/boot")])
    except HostError as e:
        raise FallbackError(f"findmnt /boot: {e}") from e
    boot_dev = source.stdout.strip()
    try:  # by-uuid and by-id links: the canonical name lsblk prints (inside the root)
        if boot_dev.startswith("/") and host.root.exists(boot_dev):
            boot_dev = host.root.symlink_target(boot_dev)
    except (OSError, HostError):
        pass
    return esp_devices(devices, boot_dev)


def _copy_efi_to_esp(host: _Host, device: str, efi_src: str) -> None:
    """Upstream ``copyEFIToESP``."""
    try:
        host.run(["mount", device, host.path(MOUNT_POINT)])
    except HostError as e:
        raise FallbackError(f"mounting {device}: {e}") from e
    failed = False
    try:
        _remove_leftovers(host.root)
        log.info("bootupd fallback [Before %s]:\n%s", device, _sums(host.root))
        try:
            host.run(["cp", "-rp", host.path(efi_src), host.path(MOUNT_POINT) + "/"])
        except HostError as e:
            raise FallbackError(f"copying EFI files: {e}") from e
        log.info("bootupd fallback [After %s]:\n%s", device, _sums(host.root))
    except BaseException:
        failed = True
        raise
    finally:
        try:
            host.run(["umount", host.path(MOUNT_POINT)])
        except HostError as e:
            log.info("bootupd fallback: umount %s: %s", MOUNT_POINT, e)
            if not failed:
                raise FallbackError(f"unmounting {MOUNT_POINT}: {e}") from e


def _remove_leftovers(root: Root) -> None:
    """The ``.btmp.*`` directories a failed bootupctl update left (best effort)."""
    try:
        base = root.host_path(MOUNT_POINT + "/EFI")
        entries = list(os.scandir(base))
    except OSError:
        return
    for entry in entries:
        if entry.name.startswith(".btmp.") and entry.is_dir(follow_symlinks=False):
            node = f"{MOUNT_POINT}/EFI/{entry.name}"
            log.info("bootupd fallback: removing leftover %s", node)
            try:
                shutil.rmtree(entry.path)
            except OSError as e:
                log.info("bootupd fallback: failed to remove %s: %s", node, e)


def _sums(root: Root) -> str:
    """``find /boot/efi -type f | xargs sha256sum`` (node paths; best effort)."""
    lines = []
    try:
        base = root.host_path(MOUNT_POINT)
    except OSError:
        return ""
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames.sort()
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            try:
                if not stat.S_ISREG(os.lstat(path).st_mode):
                    continue
                with open(path, "rb") as f:
                    digest = hashlib.file_digest(f, "sha256").hexdigest()
            except OSError:
                continue
            lines.append(f"{digest}  {MOUNT_POINT}{path[len(base) :]}\n")
    return "".join(lines)
