"""Updates driven by the cluster: move the node from its current config to ``desiredConfig``.

Upstream ``triggerUpdate``/``update`` (reference 2.1): fetch the desired
MachineConfig, check the files on disk against the current one (preflight),
plan, mark the node ``Working``, drain when the plan says so, run the update
transaction, then reboot (``post-config-action=Rebooting``) or finish
rebootless with ``Done``. Every failure is a :class:`SyncError` whose message
is the node's ``reason``.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable

from mcd.agent.bootloader import postboot, softreboot, stage
from mcd.agent.report import startup, timing
from mcd.agent.safety import bootretry, gateboots, health, owed
from mcd.agent.update import gating, imagemode, progress, trying
from mcd.agent.update.context import (
    AGENT_LOCK_WAIT,
    Config,
    Context,
    MissingConfig,
    Retarget,
    SyncError,
    Unreconcilable,
    start_drift_monitor,
    update_rules,
)
from mcd.agent.update.handles import current_config_on_disk, document_of, parse_config
from mcd.agent.update.journal import StateError
from mcd.agent.update.targetcheck import TargetCheck, identity_of
from mcd.agent.update.transaction import Outcome, Transaction, UpdateError
from mcd.cluster.api import ApiError, Obj
from mcd.cluster.configs import MachineConfigNotFound, get_machine_config
from mcd.cluster.drain import DrainAbandoned, DrainError
from mcd.cluster.events import Reason
from mcd.cluster.node import annotations_of
from mcd.host.errors import HostError
from mcd.host.fs import fsops
from mcd.host.lock import LockBusy, writer_lock
from mcd.host.ondisk.validation import unexpected_state, validate_on_disk
from mcd.host.systemd.journal import set_log_fields
from mcd.model.errors import ConfigError
from mcd.model.ignition.config import decoding_once
from mcd.model.machineconfig import MachineConfig, empty_machine_config
from mcd.model.planning.plan import UpdatePlan, make_plan
from mcd.model.text import goquote
from mcd.model.vocabulary import (
    EMPTY_CONFIG_NAME,
    FORCE_FILE,
    Annotation,
    NodeState,
    drain_required,
)

log = logging.getLogger(__name__)


def fetch_config(ctx: Context, name: str) -> Config:
    """The MachineConfig ``name`` from the API server; the empty config (``mco-empty-mc``, what
    a node with no install-time config starts from) is never fetched: it lives in memory, as
    upstream's ``canonicalizeEmptyMC`` (no MachineConfig of that name exists anywhere)."""
    if name == EMPTY_CONFIG_NAME:
        return _empty_config()
    try:
        obj = get_machine_config(ctx.kube, name)
    except MachineConfigNotFound as e:
        raise MissingConfig(name, str(e)) from e
    document = json.dumps(obj).encode()
    try:
        return Config(parse_config(document), document, identity_of(obj))
    except ConfigError as e:
        raise SyncError(f"invalid MachineConfig {name}: {e}") from e


def current_config(ctx: Context, node: Obj) -> Config:
    """The on-disk ``currentconfig`` is the truth; else the annotation's MachineConfig; a node
    that has neither was never configured and starts from the empty config."""
    annotation = annotations_of(node).get(Annotation.CURRENT_CONFIG, "")
    try:
        on_disk = current_config_on_disk(ctx.host.root)
    except StateError as e:  # Degraded with the file and the way out; never a traceback
        raise SyncError(str(e)) from e
    if on_disk is not None:
        mc, document = on_disk
        if annotation and annotation != mc.name:
            log.info(
                "Disk currentConfig %s overrides node's currentConfig annotation %s",
                goquote(mc.name), goquote(annotation),
            )  # fmt: skip
        return Config(mc, document)
    if annotation:
        return fetch_config(ctx, annotation)
    log.info("Node has no current config; starting from the empty config %s", EMPTY_CONFIG_NAME)
    return _empty_config()


def _empty_config() -> Config:
    empty = empty_machine_config()
    return Config(empty, document_of(empty, None))


def validate_current(ctx: Context, mc: MachineConfig) -> str:
    """'' when the node holds ``mc`` (files, units, OS image, kernel arguments), else the reason,
    with the previous boot's finalization failure as its possible root cause (upstream
    ``validateOnDiskState``)."""
    problem = _validate_current(ctx, mc)
    finalize = annotations_of(ctx.writer.current()).get(startup.FINALIZE_FAILURE, "")
    return f"{problem}; possible root cause: {finalize}" if problem and finalize else problem


def _validate_current(ctx: Context, mc: MachineConfig) -> str:
    host = ctx.host
    report = validate_on_disk(mc, host.root, host.effects.systemd)
    if not report.ok:
        return report.reasons()[0]
    boot_problem = postboot.boot_problem(host, mc)  # bootc image, GRUB drop-in, /proc/cmdline
    if boot_problem:
        return unexpected_state(mc.name, boot_problem)
    if host.ostree and host.rpm is not None and mc.os_image_url:
        try:
            booted = host.rpm.booted_image()
            if booted != mc.os_image_url:
                expected, have = goquote(mc.os_image_url), goquote(booted)
                return unexpected_state(
                    mc.name, f"expected target osImageURL {expected}, have {have}"
                )
            if mc.kernel_arguments:
                host.rpm.check_kargs(mc.kernel_arguments)
        except HostError as e:
            return unexpected_state(mc.name, str(e))
    return ""


def trigger_update(
    ctx: Context, node: Obj, current: Config, desired_name: str, *, preflight: bool = True
) -> Outcome:
    with decoding_once():  # checked, written and checked again: each file decoded once
        return _trigger_update(ctx, node, current, desired_name, preflight)


def _trigger_update(
    ctx: Context, node: Obj, current: Config, desired_name: str, preflight: bool
) -> Outcome:
    set_log_fields(MCD_CONFIG=desired_name)  # journald: the config being applied
    desired = fetch_config(ctx, desired_name)
    try:  # image mode: desiredImage embedded as the config's osImageURL (gated)
        followed = imagemode.follow(annotations_of(node), desired.document)
    except imagemode.ImageRefused as e:
        raise SyncError(str(e)) from e
    desired = Config(*followed, desired.identity) if followed else desired
    try:
        with writer_lock(ctx.host.root, f"mcd start: update to {desired.name}", AGENT_LOCK_WAIT):
            return _update(ctx, current, desired, preflight, drain_required(annotations_of(node)))
    except LockBusy as e:
        raise SyncError(str(e)) from e


def _update(
    ctx: Context, current: Config, desired: Config, preflight: bool, may_drain: bool
) -> Outcome:
    root = ctx.host.root
    progress.needs_update(ctx)
    force = root.exists(FORCE_FILE)
    if force:
        bootretry.clear(root)
        gateboots.clear(root)
    gave_up = bootretry.given_up(root, desired.name)
    if gave_up:  # the node kept booting the old deployment for this config
        raise SyncError(gave_up)
    pool = gating.node_pool_annotations(ctx)  # the gate's and the soft reboot's settings
    try:  # bad gate settings stop the update before anything is written
        gate = gating.gate_for(ctx, pool)
    except health.GateSettingsError as e:
        raise SyncError(str(e)) from e
    request = gating.retry_requested(ctx, desired.name)
    if request and gateboots.honour_retry(root, request):  # a resumed rollout: gate it again
        log.info("Health gate of %s re-run as the controller asked: %s", desired.name, request)
    refused = gateboots.refused(root, desired.name, gate.settings.max_boots)
    if refused and gate.settings.enabled:  # its gate failed too often: no reboot loop
        raise SyncError(refused)
    if force:
        log.info("Skipping preflight config drift check; %s present", FORCE_FILE)
    elif preflight:
        problem = validate_on_disk(current.mc, root, ctx.host.effects.systemd)
        if not problem.ok:
            reason = problem.reasons()[0]
            log.error("Preflight config drift check failed: %s", reason)
            ctx.events.record(Reason.PREFLIGHT_CONFIG_DRIFT_CHECK_FAILED, reason)
            raise SyncError(reason)
    policies, overrides = update_rules(ctx)
    plan = make_plan(
        current.mc, desired.mc, policies, force=force, node_fips=ctx.host.fips_for(desired.mc),
        host=ctx.host.support(), soft_reboot=softreboot.allowed(ctx, pool), overrides=overrides,
    )  # fmt: skip
    log.info("Node disruption policies from %s", policies.source)
    if not plan.reconcilable:
        ctx.events.record(Reason.FAILED_TO_RECONCILE, plan.reason)
        progress.not_compatible(ctx, current.name, desired.name, plan.reason)
        raise Unreconcilable(plan.reason)
    on_trial = trying.begin(ctx, plan, current, desired)
    progress.prepared(ctx, plan)
    if force:
        fsops.remove(root, FORCE_FILE)  # consumed once the actions are computed
    ctx.status.working()
    timing.started(root, desired.name, timing.kind_of(plan))
    ctx.updates += 1
    with ctx.guard.protect():
        log.info(
            "Starting update from %s to %s: %s",
            current.name, desired.name, plan.diff.os_changes_string() or "no OS changes",
        )  # fmt: skip
        try:
            outcome = _run(ctx, plan, current, desired, may_drain, gate)
        except BaseException:
            if on_trial:
                trying.abandon(ctx)
            raise
    if outcome is Outcome.REBOOTING:
        ctx.reboot_queued = True
        log.info("reboot successful")
    elif outcome is Outcome.DONE:
        wrong = validate_current(ctx, desired.mc)  # every managed path, not only those written
        if wrong:
            ctx.events.record(Reason.ON_DISK_STATE_VALIDATION_FAILED, wrong)
            start_drift_monitor(ctx, desired.mc, wrong)
            raise SyncError(wrong)
        complete_update(ctx, desired.mc)
    return outcome


def _run(
    ctx: Context,
    plan: UpdatePlan,
    current: Config,
    desired: Config,
    may_drain: bool = True,
    gate: health.HealthGate | None = None,
) -> Outcome:
    if plan.drain and may_drain:
        stage.before_drain(ctx, plan)  # the OS image pulled while the pods still run
    if plan.drain and not may_drain:  # upstream performDrain on a SingleReplica cluster
        log.info("Drain not required, skipping")
        ctx.events.record(Reason.DRAIN, "Drain not required, skipping")
    elif plan.drain:
        check = TargetCheck(desired, plan.force, writer=ctx.writer, kube=ctx.kube, drift=ctx.drift)
        drain_start = time.monotonic()
        try:
            ctx.drainer.drain(desired.name, check)
        except DrainAbandoned as e:
            if not plan.force:
                _no_drift_since_preflight(ctx, current, drained=True)
            raise Retarget(str(e)) from e
        except DrainError as e:
            raise SyncError(str(e)) from e
        changed = check.now()  # what is written is the target as it stands after the drain
        if changed:
            log.info("Update to %s given up after the drain: %s", desired.name, changed)
            raise Retarget(changed)
        ctx.metrics.drain_duration.observe(time.monotonic() - drain_start)
        progress.drained(ctx, f"drain-{desired.name}")
    else:
        log.info("Drain not required for this update: %s", plan.drain_reason or "no disruption")
        progress.drain_not_required(ctx)
    if ctx.drift.stop():  # watched until now (the drain included); the writes start here
        ctx.events.record(Reason.CONFIG_DRIFT_MONITOR_STOPPED, "Config Drift Monitor stopped")
    if not plan.force:
        _no_drift_since_preflight(ctx, current, plan.drain)
    progress.applying(ctx, plan)
    txn = Transaction(
        ctx.host, plan, current.document, desired.document,
        preflight=False, skip_certificate_write=True,
        before_reboot=lambda rationale: _applied_then_reboot(ctx, plan, rationale),
        record=_recording(ctx, plan), gate=gate,
    )  # fmt: skip
    try:
        outcome = txn.run()
    except UpdateError as e:
        if e.step == "os" and plan.diff.os_update:
            progress.image_pull(ctx, plan.new.os_image_url, str(e))
        if e.step == "gate":  # counted as a boot is: a bounded number of tries
            gateboots.record_failure(ctx.host.root, desired.name, f"{time.time_ns()}")
            gating.record_rollback(ctx, str(e), "rebootless")
        if e.step == "os":
            ctx.metrics.pivot_errors.inc()
        if e.step == "reboot":
            ctx.metrics.reboots_failed.inc()
        raise SyncError(str(e)) from e
    if plan.diff.os_update or plan.diff.kargs:
        ctx.metrics.pivot_errors.set(0)
    if outcome is Outcome.DONE:
        progress.applied(ctx, plan)
        progress.post_actions(ctx, plan)
        progress.node_not_degraded(ctx)
    return outcome


def _recording(ctx: Context, plan: UpdatePlan) -> Callable[[Reason, str], object]:
    """The update's Events, and on an image-mode node the pull of the image beside them
    (ImagePulledFromRegistry: upstream reports it around the rebase)."""

    def record(reason: Reason, message: str) -> object:
        done = ctx.events.record(reason, message)
        if plan.diff.os_update and reason in (Reason.OS_UPDATE_STARTED, Reason.OS_UPDATE_STAGED):
            image = plan.new.os_image_url
            progress.image_pull(ctx, image, done=reason is Reason.OS_UPDATE_STAGED)
        return done

    return record


def _no_drift_since_preflight(ctx: Context, current: Config, drained: bool) -> None:
    """A change made on disk since the preflight (a hot-fix during a long drain) stops the
    update before anything is overwritten, with preflight's reason."""
    problem = validate_on_disk(current.mc, ctx.host.root, ctx.host.effects.systemd)
    if problem.ok:
        return
    reason = problem.reasons()[0]
    log.error("Config drift found before writing: %s", reason)
    ctx.events.record(Reason.PREFLIGHT_CONFIG_DRIFT_CHECK_FAILED, reason)
    start_drift_monitor(ctx, current.mc, reason)  # a restore is noticed and retried at once
    if drained:
        try:  # nothing was written: the node goes back to work while it waits
            ctx.drainer.uncordon(current.name)
        except DrainError as e:
            log.warning("Could not uncordon node %s: %s", ctx.node_name, e)
    raise SyncError(reason)


def _applied_then_reboot(ctx: Context, plan: UpdatePlan, rationale: str) -> None:
    progress.applied(ctx, plan)
    progress.node_not_degraded(ctx)
    progress.rebooting(ctx)
    before_reboot(ctx, rationale)


def before_reboot(ctx: Context, rationale: str) -> None:
    """Upstream ``reboot()``: lift the SIGTERM protection, say why, mark the node Rebooting."""
    ctx.guard.release()
    ctx.drift.stop()
    ctx.events.record(Reason.REBOOT, rationale)
    log.info("initiating reboot: %s", rationale)
    try:
        ctx.writer.set_annotations({Annotation.POST_CONFIG_ACTION: NodeState.REBOOTING})
    except ApiError as e:
        log.warning("Could not mark node %s as rebooting: %s", ctx.node_name, e)


def complete_update(ctx: Context, mc: MachineConfig) -> None:
    """Upstream ``completeUpdate`` + ``SetDone``: uncordon, report Done, watch for drift.
    Never Done on a config whose reboot is still owed in this boot."""
    refuse_done_if_owed(ctx, mc.name)
    try:
        ctx.drainer.uncordon(mc.name)
    except DrainError as e:
        raise SyncError(str(e)) from e
    ctx.events.record(
        Reason.NODE_DONE, f"Setting node {ctx.node_name}, currentConfig {mc.name} to Done"
    )
    bootretry.clear(ctx.host.root)
    set_log_fields(MCD_CONFIG=mc.name)
    start_drift_monitor(ctx, mc)  # watching before Done: a change after Done is never missed
    timing.finished(ctx.host.root, ctx.metrics, mc.name)  # before Done: then disk is settled
    gating.clear_stale(ctx, mc.name)  # a failed gate of another config goes with Done
    ctx.status.done(mc.name, mc.ocl_image)
    progress.completed(ctx, mc.name)
    progress.irreconcilable(ctx, mc)
    log.info("Update completed for config %s and node is Done", mc.name)


def refuse_done_if_owed(ctx: Context, config: str) -> None:
    record = owed.pending_in(ctx.host.root, ctx.host.boot_id())
    if record is not None and record.config == config:
        raise SyncError(owed.failed_to_reboot(record.config, record.boot_id))
