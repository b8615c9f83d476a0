"""The first sync after the agent starts (upstream ``checkStateOnFirstRun``, reference 1.7).

1. Clear ``post-config-action=Rebooting`` left by the reboot. A reboot owed
   since another boot has happened (:mod:`mcd.agent.safety.owed`); one owed since this
   boot did not: it is requested again (at most three times in one boot, then
   ``Degraded`` with upstream's ``... matches current! Failed to reboot?``).
2. Finish what the update journal says was interrupted: promote the config an
   update rebooted into (booted deployment and kernel arguments checked), roll
   forward, or roll back. A node that came back on the old deployment is
   detected and the update retried, never declared done.
3. The on-disk ``currentconfig`` is the truth over the annotation.
4. With the force file, skip validation and re-apply (reboot included).
5. Validate files, units, the booted OS image and kernel arguments against the
   current config. A failure is a Warning ``OnDiskStateValidationFailed`` and
   ``Degraded``; the drift monitor starts so that a restore is noticed.
6. In the desired config: uncordon, ``Done``. Otherwise ``BootResync`` and update.
"""

from __future__ import annotations

import logging
from contextlib import nullcontext

from mcd.agent.boot import osreboot
from mcd.agent.boot.bootstrap import (
    bootstrap_pivot,
    finish_bootstrap,
    load_node_annotations,
    with_bootstrap_image,
)
from mcd.agent.bootloader import softreboot, support
from mcd.agent.report import startup
from mcd.agent.safety import bootretry, health, owed
from mcd.agent.update import gating, imagemode, progress
from mcd.agent.update.context import (
    AGENT_LOCK_WAIT,
    Config,
    Context,
    SyncError,
    start_drift_monitor,
)
from mcd.agent.update.imagemode import desired_image
from mcd.agent.update.journal import Journal, StateError
from mcd.agent.update.resume import recover
from mcd.agent.update.transaction import Outcome, UpdateError
from mcd.agent.update.trigger import (
    before_reboot,
    complete_update,
    current_config,
    fetch_config,
    trigger_update,
    validate_current,
)
from mcd.cluster.api import Obj
from mcd.cluster.events import Reason
from mcd.cluster.node import annotations_of
from mcd.host.errors import HostError
from mcd.host.fs.sealing import seal_state
from mcd.host.lock import LockBusy, writer_lock
from mcd.host.ondisk.validation import unexpected_state
from mcd.host.osupdate.osrelease import read_os_release
from mcd.host.systemd.journal import set_log_fields
from mcd.host.systemd.manager import SystemdError
from mcd.model.text import goquote
from mcd.model.vocabulary import FORCE_FILE, Annotation, NodeState

log = logging.getLogger(__name__)


def boot(ctx: Context, node: Obj) -> None:
    node = load_node_annotations(ctx, node)
    annotations = annotations_of(node)
    finalize = startup.finalize_failure_annotation(ctx.host.root, annotations)
    if finalize:
        ctx.writer.set_annotations(finalize)
    if annotations.get(Annotation.POST_CONFIG_ACTION) == NodeState.REBOOTING:
        log.info("Node %s has rebooted", ctx.node_name)
        ctx.writer.set_annotations({Annotation.POST_CONFIG_ACTION: ""})
        progress.rebooted(ctx)
    support.publish(ctx, node)  # what this host can apply, for the controller
    force = ctx.host.root.exists(FORCE_FILE)
    still_owed = owed.pending_in(ctx.host.root, ctx.host.boot_id())
    interrupted = Journal(ctx.host.root).pending()
    try:
        with (
            writer_lock(ctx.host.root, "mcd start: boot checks", AGENT_LOCK_WAIT),
            ctx.guard.protect() if interrupted else nullcontext(),
        ):
            seal_state(ctx.host.root)
            proof = softreboot.settle(ctx.host, still_owed)  # a soft reboot keeps the boot id
            outcome = recover(
                ctx.host, force=force, before_reboot=lambda why: before_reboot(ctx, why),
                gate=gating.gate_for(ctx) if interrupted else None, soft_rebooted=bool(proof),
            )  # fmt: skip
    except (UpdateError, LockBusy, StateError, health.GateSettingsError) as e:
        raise SyncError(str(e)) from e
    if proof:
        log.info("%s", proof)
        ctx.events.record(Reason.REBOOT, proof)
        still_owed = None
    if outcome is Outcome.REBOOTING:
        ctx.reboot_queued = True
        return
    if still_owed is not None and not interrupted:
        reboot_again(ctx, still_owed)
        return
    current = with_bootstrap_image(ctx, node, current_config(ctx, node))
    set_log_fields(MCD_CONFIG=current.name)
    if outcome is None and bootstrap_pivot(ctx, current):
        return
    desired = annotations.get(Annotation.DESIRED_CONFIG) or current.name
    if outcome is Outcome.BOOTED_OLD:
        attempt = bootretry.record(ctx.host.root, desired)
        if attempt > bootretry.MAX_RETRIES:
            reason = _booted_old_reason(ctx, desired)
            bootretry.give_up(ctx.host.root, desired, reason)
            ctx.events.record(Reason.ON_DISK_STATE_VALIDATION_FAILED, reason)
            raise SyncError(reason)
        message = (
            f"Node {ctx.node_name} booted the previous deployment instead of the one staged "
            f"for {desired}; retrying the update ({attempt} of {bootretry.MAX_RETRIES})"
        )
        log.warning("%s", message)
        ctx.events.record(Reason.BOOT_RESYNC, message)
        trigger_update(ctx, node, current, desired, preflight=False)
        return
    log.info("Validating against current config %s", current.name)
    if force:
        log.info("Skipping on-disk validation; %s present", FORCE_FILE)
        trigger_update(ctx, node, current, desired)
        return
    problem = validate_current(ctx, current.mc)
    if problem:
        ctx.events.record(Reason.ON_DISK_STATE_VALIDATION_FAILED, problem)
        start_drift_monitor(ctx, current.mc, problem)
        raise SyncError(problem)
    log.info("Validated on-disk state")
    finish_bootstrap(ctx)
    if current.name == desired and current.mc.ocl_image == desired_image(annotations):
        _verify_extensions(ctx, current)
        if outcome is Outcome.DONE:
            log.info("Completing update to target MachineConfig: %s", desired)
        else:
            log.info("System state unchanged: %s", desired)
        osreboot.after_boot(ctx, current)  # an OS reboot's health gate, before the uncordon
        complete_update(ctx, current.mc)
        return
    ctx.events.record(
        Reason.BOOT_RESYNC,
        f"Booting node {ctx.node_name}, currentConfig {current.name}, desiredConfig {desired}",
    )
    trigger_update(ctx, node, current, desired)


def _verify_extensions(ctx: Context, current: Config) -> None:
    """Upstream ``updateConfigAndState`` on a CoreOS EL node: the extensions' packages are
    installed in the deployment that booted before the update is marked done."""
    host = ctx.host
    if not (host.ostree and host.rpm is not None and current.mc.extensions):
        return
    try:
        if not read_os_release(host.root).is_el:
            return
        problem = imagemode.verify_installed(host.root, current.mc)
    except HostError as e:
        problem = str(e)
    if problem:
        raise SyncError(f"extension package verification failed: {problem}")


def reboot_again(ctx: Context, record: owed.Owed) -> None:
    """The reboot owed since this boot never happened (the agent was killed between the
    commit and the request, or the request was lost): ask for it again, bounded."""
    try:
        owed.count_request(ctx.host.root, record.config, record.boot_id)
    except owed.RebootNotHappening as e:
        ctx.metrics.reboots_failed.inc()
        raise SyncError(str(e)) from e
    rationale = f"Node will reboot into config {record.config}"
    log.warning(
        "Reboot owed for config %s since boot id %s did not happen; requesting it again",
        record.config, record.boot_id,
    )  # fmt: skip
    before_reboot(ctx, rationale)
    try:
        ctx.host.effects.systemd.reboot(rationale)
    except SystemdError as e:
        ctx.metrics.reboots_failed.inc()
        raise SyncError(f"reboot command failed, something is seriously wrong: {e}") from e
    ctx.reboot_queued = True


def _booted_old_reason(ctx: Context, desired: str) -> str:
    """Upstream's reason for a node on the wrong deployment (``validateOnDiskState``)."""
    have = ctx.host.rpm.booted_image() if ctx.host.rpm is not None else ""
    want = fetch_config(ctx, desired).mc.os_image_url
    if want and want != have:
        return unexpected_state(
            desired, f"expected target osImageURL {goquote(want)}, have {goquote(have)}"
        )
    return unexpected_state(desired, "the deployment staged for it did not boot")
