"""Which kind of reboot an update costs: none, a soft reboot, or a full one (pure).

systemd's soft reboot (``systemctl soft-reboot``; mcd uses it from systemd 256, which counts
soft reboots so that the agent can prove one happened) stops userspace and starts
it again on the same kernel: seconds instead of the firmware's minutes, and the boot id
(``/proc/sys/kernel/random/boot_id``) stays. It is enough exactly when the kernel, the
initrd and the kernel command line do not change: not for a new OS image, extensions (a new
deployment), a kernel type, kernel arguments or FIPS (a kernel argument). It is used only
when the pool allows it (:data:`SOFT_REBOOT_ANNOTATION`, default off) and the host's
systemd has it; otherwise, and whenever the soft reboot cannot be proven afterwards, the
node reboots fully.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from mcd.model.planning.applicability import SOFT_REBOOT_SYSTEMD, HostSupport
from mcd.model.planning.diff import MachineConfigDiff

SOFT_REBOOT_ANNOTATION = "mcd-project.github.io/soft-reboot"
"""Pool (and Node) annotation: ``"true"`` lets mcd soft-reboot when the kernel stays."""


class RebootKind(StrEnum):
    NONE = "none"
    SOFT = "soft"
    FULL = "full"


@dataclass(frozen=True)
class RebootChoice:
    kind: RebootKind
    why: str

    def to_json(self) -> dict[str, str]:
        return {"kind": str(self.kind), "why": self.why}


NO_REBOOT = RebootChoice(RebootKind.NONE, "no reboot needed")


def kernel_changes(diff: MachineConfigDiff) -> list[str]:
    """The diff categories that change the kernel, the initrd or the kernel command line."""
    flags = (
        (diff.os_update, "osUpdate"),
        (diff.extensions, "extensions"),
        (diff.kernel_type, "kernelType"),
        (diff.kargs, "kargs"),
        (diff.fips, "fips"),
    )
    return [name for on, name in flags if on]


def soft_reboot_allowed(value: str | None) -> bool:
    """The setting's value: only ``true`` (any case) turns it on."""
    return (value or "").strip().lower() == "true"


def choose(
    reboot: bool, diff: MachineConfigDiff, host: HostSupport | None, allowed: bool
) -> RebootChoice:
    """The reboot an update needs: ``reboot`` is the plan's, ``allowed`` the pool setting."""
    if not reboot:
        return NO_REBOOT
    changes = kernel_changes(diff)
    if changes:
        return RebootChoice(
            RebootKind.FULL, f"the kernel or its command line changes ({', '.join(changes)})"
        )
    if not allowed:
        return RebootChoice(RebootKind.FULL, f"soft reboot not enabled ({SOFT_REBOOT_ANNOTATION})")
    if host is None or not host.systemd_version:
        return RebootChoice(RebootKind.FULL, "the host's systemd version is not known")
    if not host.soft_reboot:
        return RebootChoice(
            RebootKind.FULL,
            f"systemd {host.systemd_version} has no soft-reboot (needs {SOFT_REBOOT_SYSTEMD})",
        )
    return RebootChoice(RebootKind.SOFT, "kernel, initrd and kernel arguments stay the same")
