"""The phases of an update, reported on the node's MachineConfigNode with upstream's
conditions, reasons and messages (``pkg/daemon`` and the drain controller's calls to
``upgrademonitor``). One status write per phase change; a failed write is only logged."""

from __future__ import annotations

from mcd.agent.report import irreconcilable as irreconcilable_report
from mcd.agent.update.context import Context
from mcd.cluster.mcn import MachineConfigNodeReporter
from mcd.cluster.node import annotations_of
from mcd.model.disruption.policy import ActionType
from mcd.model.machineconfig import MachineConfig
from mcd.model.node import mcn as m
from mcd.model.planning.plan import UpdatePlan
from mcd.model.vocabulary import Annotation


def reporter(ctx: Context) -> MachineConfigNodeReporter:
    if ctx.mcn is None:
        ctx.mcn = MachineConfigNodeReporter(ctx.kube, ctx.node_name)
    return ctx.mcn


def _report(
    ctx: Context, parent: m.Condition, sub: m.Condition | None = None, *, defer: bool = False
) -> None:
    reporter(ctx).report(ctx.writer.current(), parent, sub, defer=defer)


def irreconcilable(ctx: Context, target: MachineConfig) -> None:
    """Done on ``target``: the MachineConfigNode's irreconcilableChanges (upstream, after
    SetDone in syncNode)."""
    irreconcilable_report.report(reporter(ctx), ctx.writer.current(), ctx.host.root, target)


def _will(needed: bool) -> str:
    return "" if needed else "not"


def needs_update(ctx: Context) -> None:
    _report(ctx, m.phase(m.UPDATED, f"Node {ctx.node_name} needs an update", m.FALSE), defer=True)


def prepared(ctx: Context, plan: UpdatePlan) -> None:
    """Written at once when a drain follows (it may take long); else it goes with the
    applying phase's write a moment later."""
    actions = "[" + " ".join(str(a) for a in plan.actions) + "]"
    drain = "true" if plan.drain else "false"
    message = f"Update Compatible. Post Cfg Actions: {actions} Drain Required: {drain}"
    _report(ctx, m.phase(m.UPDATE_PREPARED, message), defer=not plan.drain)


def not_compatible(ctx: Context, old: str, new: str, reason: str) -> None:
    message = (
        f"Update Failed compatibility validation. MachineConfigs {old} and {new} are not "
        f"compatible. Err: {reason}"
    )
    _report(ctx, m.phase(m.UPDATE_PREPARED, message, m.UNKNOWN))


def drained(ctx: Context, drainer_key: str) -> None:
    """Cordoned, then drained (mcd's drain does both; the messages are the drain
    controller's)."""
    _report(
        ctx,
        m.phase(
            m.UPDATE_EXECUTED,
            "Cordoned Node as part of update executed phase",
            m.UNKNOWN,
            m.CORDONED,
        ),
        m.child(
            m.UPDATE_EXECUTED,
            m.CORDONED,
            "Cordoned node. The node is reporting Unschedulable = true",
        ),
        defer=True,
    )
    _report(
        ctx,
        m.phase(
            m.UPDATE_EXECUTED, "Drained Node as part of update executed phase", m.UNKNOWN, m.DRAINED
        ),
        m.child(
            m.UPDATE_EXECUTED,
            m.DRAINED,
            "Drained node. The drain is complete as the desired drainer matches current "
            f"drainer: {drainer_key}",
        ),
        defer=True,
    )


def drain_not_required(ctx: Context) -> None:
    message = "Node Drain Not required for this update."
    _report(
        ctx,
        m.phase(m.UPDATE_EXECUTED, message, m.UNKNOWN, m.DRAINED),
        m.child(m.UPDATE_EXECUTED, m.DRAINED, message, m.FALSE),
        defer=True,
    )


def image_mode(ctx: Context) -> bool:
    """The node is on, or moving to, a built image (its currentImage or desiredImage
    annotation): the MachineConfigNode reports as upstream's ImageModeStatusReporting."""
    found = annotations_of(ctx.writer.current())
    return bool(found.get(Annotation.CURRENT_IMAGE) or found.get(Annotation.DESIRED_IMAGE))


def _files_update(plan: UpdatePlan) -> bool:
    return plan.diff.passwd or plan.diff.files


def _os_update(plan: UpdatePlan) -> bool:
    return plan.diff.os_update or plan.diff.extensions or plan.diff.kernel_type


def applying(ctx: Context, plan: UpdatePlan) -> None:
    if image_mode(ctx):  # upstream update(): AppliedFiles, AppliedOSImage
        if _files_update(plan):
            _report(
                ctx,
                m.phase(
                    m.UPDATE_EXECUTED,
                    "Updating the Files on disk as a part of the in progress phase",
                    m.UNKNOWN,
                    m.FILES,
                ),
                m.child(m.UPDATE_EXECUTED, m.FILES, "Applying files to node.", m.UNKNOWN),
            )
        if _os_update(plan):
            _report(ctx, m.phase(m.UPDATE_EXECUTED,
                                 "Updating the OS on disk as a part of the in progress phase",
                                 m.UNKNOWN, m.OS_IMAGE),
                    m.child(m.UPDATE_EXECUTED, m.OS_IMAGE, "Applying new OS config to node.",
                            m.UNKNOWN))  # fmt: skip
        return
    os_, ssh = _will(plan.diff.os_update), _will(plan.diff.passwd)
    _report(
        ctx,
        m.phase(
            m.UPDATE_EXECUTED,
            "Updating the Files and OS on disk as a part of the in progress phase",
            m.UNKNOWN,
            m.FILES_AND_OS,
        ),
        m.child(
            m.UPDATE_EXECUTED,
            m.FILES_AND_OS,
            f"Applying files and new OS config to node. OS will {os_} need an update. "
            f"SSH Keys will {ssh} need an update",
            m.UNKNOWN,
        ),
    )


def applied(ctx: Context, plan: UpdatePlan) -> None:
    if image_mode(ctx):
        if _files_update(plan):
            _report(ctx, m.phase(m.UPDATE_EXECUTED,
                                 "Updated the Files on disk as a part of the in progress phase",
                                 m.TRUE, m.FILES),
                    m.child(m.UPDATE_EXECUTED, m.FILES,
                            "Applied files. SSH Keys did need an update"),
                    defer=True)  # fmt: skip
        if _os_update(plan):
            _report(ctx, m.phase(m.UPDATE_EXECUTED,
                                 "Updated the OS on disk as a part of the in progress phase",
                                 m.TRUE, m.OS_IMAGE),
                    m.child(m.UPDATE_EXECUTED, m.OS_IMAGE, "Applied new OS config to node."),
                    defer=True)  # fmt: skip
        return
    os_, ssh = _will(plan.diff.os_update), _will(plan.diff.passwd)
    _report(
        ctx,
        m.phase(
            m.UPDATE_EXECUTED,
            "Updated the Files and OS on disk as a part of the in progress phase",
            m.TRUE,
            m.FILES_AND_OS,
        ),
        m.child(
            m.UPDATE_EXECUTED,
            m.FILES_AND_OS,
            f"Applied files and new OS config to node. OS did {os_} need an update. "
            f"SSH Keys did {ssh} need an update",
        ),
        defer=True,
    )


def image_pull(ctx: Context, image: str, error: str | None = None, *, done: bool = False) -> None:
    """ImagePulledFromRegistry around the rebase of an image-mode node (upstream
    ``applyLayeredOSChanges``): pulling (Unknown), pulled (True), or failed (False)."""
    if not image_mode(ctx):
        return
    if error is not None:
        message, status = f"Failed to pull OS image {image} from registry: {error}", m.FALSE
    elif done:
        message, status = f"Successfully pulled OS image {image} from registry", m.TRUE
    else:
        message, status = f"Pulling OS image {image} from registry", m.UNKNOWN
    _report(ctx, m.phase(m.IMAGE_PULLED, message, status), defer=done)


def rebooting(ctx: Context) -> None:
    _report(ctx, m.phase(m.REBOOTED, "Upgrade requires a reboot.", m.UNKNOWN))


def post_actions(ctx: Context, plan: UpdatePlan) -> None:
    """UpdatePostActionComplete per post-config action, as upstream
    ``performPostConfigChangeNodeDisruptionAction``: None is "Changes do not require a
    reboot" (reason None); a reload (service, crio for Special, daemon-reload) is "Node has
    reloaded service X"; a restart sets no condition (upstream's TODO). Deferred: they go
    with the update's last write, the last one standing."""
    for action in plan.actions:
        if action.type is ActionType.NONE:
            condition = m.phase(
                m.UPDATE_POST_ACTION_COMPLETE, "Changes do not require a reboot", reason="None"
            )
        elif action.type in _RELOADED:
            service = action.service or _RELOADED[action.type]
            condition = m.phase(
                m.UPDATE_POST_ACTION_COMPLETE, f"Node has reloaded service {service}"
            )
        else:
            continue
        _report(ctx, condition, defer=True)


_RELOADED = {
    ActionType.RELOAD: "",
    ActionType.SPECIAL: "crio",
    ActionType.DAEMON_RELOAD: "daemon-reload",
}
"""Upstream's service names of the reloads (``CRIOServiceName``, ``DaemonReloadCommand``)."""


def rebooted(ctx: Context) -> None:
    _report(ctx, m.phase(m.REBOOTED, "Node has rebooted"))


def completed(ctx: Context, config_name: str) -> None:
    """Uncordoned, resumed, updated (upstream: the drain controller, then the daemon)."""
    _report(
        ctx,
        m.phase(
            m.UPDATE_COMPLETE,
            "Uncordoned Node as part of completing upgrade phase",
            m.TRUE,
            m.UNCORDONED,
        ),
        m.child(
            m.UPDATE_COMPLETE,
            m.UNCORDONED,
            "UnCordoned node. The node is reporting Unschedulable = false",
        ),
        defer=True,
    )
    _report(
        ctx,
        m.phase(m.RESUMED, f"In desired config {config_name}. Resumed normal operations."),
        defer=True,
    )
    _report(ctx, m.phase(m.UPDATED, f"Node {ctx.node_name} Updated"))


# -- NodeDegraded (upstream reportMachineNodeDegradeStatus, from update() and
#    updateDegradedState: every Degraded, the certificate writer's included) --------------


def node_degraded(ctx: Context, reason: str) -> None:
    """The agent reported a failure: NodeDegraded True with the error (one write, none when
    the same failure is reported again)."""
    message = f"Node {ctx.node_name} upgrade failure. {reason}"
    _report(ctx, m.phase(m.NODE_DEGRADED, message))


def node_not_degraded(ctx: Context, *, defer: bool = True) -> None:
    """An update went through: NodeDegraded False (deferred: it goes with the next write)."""
    message = f"Node {ctx.node_name} upgrade succeeded"
    _report(ctx, m.phase(m.NODE_DEGRADED, message, m.FALSE), defer=defer)


def recovered(ctx: Context) -> None:
    """A Degraded node found well and set Done without an update: NodeDegraded False and
    Updated again, in one write (none when the MachineConfigNode already says so)."""
    node_not_degraded(ctx)
    _report(ctx, m.phase(m.UPDATED, f"Node {ctx.node_name} Updated"))
