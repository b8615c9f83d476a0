"""The Events an update emits, with upstream's reasons and texts.

``applyOSChanges``: ``InClusterUpgrade`` (OS image, extensions or kernel type),
``OSUpdateStarted`` (the OS change string), ``OSUpgradeApplied`` or
``OSUpgradeSkipped``, then ``OSUpdateStaged``. ``performPostConfigChangeNodeDisruptionAction``:
``SkipReboot`` for None, ``ServiceReload`` / ``ServiceRestart`` and their
``FailedServiceReload`` / ``FailedServiceRestart``.
"""

from __future__ import annotations

from collections.abc import Callable

from mcd.cluster.events import Reason
from mcd.model.disruption.policy import Action, ActionType
from mcd.model.machineconfig import MachineConfig
from mcd.model.planning.plan import UpdatePlan

Record = Callable[[Reason, str], object]
DAEMON_RELOAD = "daemon-reload"  # upstream constants.DaemonReloadCommand


def os_started(plan: UpdatePlan) -> list[tuple[Reason, str]]:
    d, new = plan.diff, plan.new
    events = []
    if d.os_update or d.extensions or d.kernel_type:
        events.append((Reason.IN_CLUSTER_UPGRADE, f"Updating from oscontainer {new.os_image_url}"))
    reason = d.os_changes_string() or (
        f"Updating to a target config with {new.canonical_kernel_type} kernel"
    )
    events.append((Reason.OS_UPDATE_STARTED, reason))
    return events


def os_finished(plan: UpdatePlan) -> list[tuple[Reason, str]]:
    old, new = plan.old, plan.new
    if plan.diff.os_update:
        upgrade = (
            Reason.OS_UPGRADE_APPLIED,
            f"OS upgrade applied; new MachineConfig ({new.name}) has new OS image "
            f"({new.os_image_url})",
        )
    else:
        upgrade = (
            Reason.OS_UPGRADE_SKIPPED,
            f"OS upgrade skipped; new MachineConfig ({new.name}) has same OS image "
            f"({new.os_image_url}) as old MachineConfig ({old.name})",
        )
    return [upgrade, (Reason.OS_UPDATE_STAGED, "Changes to OS staged")]


def action_done(action: Action) -> tuple[Reason, str] | None:
    if action.type is ActionType.NONE:
        return Reason.SKIP_REBOOT, "Config changes do not require reboot."
    if action.type is ActionType.RESTART:
        return (
            Reason.SERVICE_RESTART,
            f"Config changes do not require reboot. Service {action.service} was restarted.",
        )
    if action.type in (ActionType.RELOAD, ActionType.DAEMON_RELOAD):
        service = action.service or DAEMON_RELOAD
        return (
            Reason.SERVICE_RELOAD,
            f"Config changes do not require reboot. Service {service} was reloaded.",
        )
    return None


def action_failed(action: Action, error: str) -> tuple[Reason, str] | None:
    if action.type is ActionType.RESTART:
        return (
            Reason.FAILED_SERVICE_RESTART,
            f"Restarting {action.service} service failed. Error: {error}",
        )
    if action.type in (ActionType.RELOAD, ActionType.DAEMON_RELOAD):
        service = action.service or DAEMON_RELOAD
        return Reason.FAILED_SERVICE_RELOAD, f"Reloading service {service} failed. Error: {error}"
    return None


__all__ = ["MachineConfig", "Record", "action_done", "action_failed", "os_finished", "os_started"]
