"""What this host can apply, detected from its root: the OS image tool, the boot loader for
kernel arguments, the systemd version (:class:`mcd.model.planning.applicability.HostSupport`).

Nothing is guessed from the distribution's name: a tool counts when its files are there.

- OS image: ``rpm-ostree`` on an ostree-booted host (``/run/ostree-booted``) with an
  rpm-ostree client (and rpm-ostree in the root, or no bootc there), else ``bootc`` on an
  ostree-booted host that has ``bootc``, else none.
- Kernel arguments: rpm-ostree's deployments on such a host; else GRUB when
  ``/etc/default/grub`` and ``update-grub`` or ``grub-mkconfig`` are there (Debian, Ubuntu:
  their ``grub-mkconfig`` sources ``/etc/default/grub.d/*.cfg``); else ``grubby`` with
  Boot Loader Specification entries (``/boot/loader/entries``); else none.
- systemd: the version in the name of ``libsystemd-shared-<N>.so`` (0 when not found).
- Container runtime: the host's CRI endpoint or socket (:mod:`mcd.host.runtime`); the agent
  lets the kubelet's own report outrank it.
"""

from __future__ import annotations

import glob
import re

from mcd.host import runtime
from mcd.host.errors import HostError
from mcd.host.osupdate.osrelease import PATHS as OS_RELEASE_PATHS
from mcd.host.osupdate.osrelease import parse_os_release
from mcd.host.rootfs import Root
from mcd.model.osupdate.bootargs import GRUB_DEFAULTS
from mcd.model.planning.applicability import BOOTC, GRUB, GRUBBY, RPM_OSTREE, HostSupport

OSTREE_BOOTED = "/run/ostree-booted"
BIN_DIRS = ("/usr/sbin", "/usr/bin", "/sbin", "/bin")
BLS_ENTRIES = "/boot/loader/entries"
SHARED_LIBS = ("/usr/lib/systemd", "/usr/lib64/systemd", "/usr/lib/*-linux-gnu*/systemd")
_SHARED = re.compile(r"libsystemd-shared-(\d+)(?:[.-][^/]*)?\.so$")


def find_tool(root: Root, name: str) -> str:
    """The node path of ``name`` in the root's usual binary directories; '' when absent."""
    for directory in BIN_DIRS:
        path = f"{directory}/{name}"
        if root.exists(path):
            return path
    return ""


def os_name(root: Root) -> str:
    """``PRETTY_NAME``, else ``ID VERSION_ID``, of the root's os-release; '' when none."""
    for path in OS_RELEASE_PATHS:
        try:
            values = parse_os_release(root.read_bytes(path).decode(errors="replace"))
        except (OSError, HostError):
            continue
        name = values.get("PRETTY_NAME") or " ".join(
            v for v in (values.get("ID", ""), values.get("VERSION_ID", "")) if v
        )
        if name:
            return "".join(ch for ch in name if ch.isprintable())[:200]
    return ""


def systemd_version(root: Root) -> int:
    for pattern in SHARED_LIBS:
        for path in glob.glob(root.host(pattern) + "/libsystemd-shared-*.so"):
            match = _SHARED.search(path)
            if match:
                return int(match.group(1))
    return 0


def detect(root: Root, *, rpm_ostree: bool) -> HostSupport:
    """What the host under ``root`` can apply. ``rpm_ostree``: mcd has an rpm-ostree client
    for it (the agent's own view, as upstream's ``isCoreOS``)."""
    ostree = root.exists(OSTREE_BOOTED)
    bootc = bool(find_tool(root, "bootc"))
    image = ""
    if ostree and rpm_ostree and (find_tool(root, "rpm-ostree") or not bootc):
        image = RPM_OSTREE
    elif ostree and bootc:  # a bootc host without rpm-ostree
        image = BOOTC
    return HostSupport(
        os=os_name(root),
        os_image=image,
        kernel_arguments=_kargs_tool(root, image == RPM_OSTREE),
        systemd_version=systemd_version(root),
        container_runtime=runtime.detect(root).name,
    )


def _kargs_tool(root: Root, rpm_ostree: bool) -> str:
    if rpm_ostree:
        return RPM_OSTREE
    regenerate = find_tool(root, "update-grub") or find_tool(root, "grub-mkconfig")
    if root.exists(GRUB_DEFAULTS) and regenerate:
        return GRUB
    if find_tool(root, "grubby") and root.exists(BLS_ENTRIES):
        return GRUBBY
    return ""
