"""Try mode for the agent: the Node annotation ``mcd-project.github.io/try``.

``kubectl annotate node N mcd-project.github.io/try=10m`` before moving ``desiredConfig``:
the next update (a rebootless one) is applied as a try. The previous config and the
deadline are kept on the node (:mod:`mcd.agent.safety.trymode`, the same files as ``once-from
--try``). ``mcd-project.github.io/try=confirmed`` (or ``mcd confirm`` on the node) keeps it;
otherwise, at the first sync after the deadline (the periodic resync, any Node change), the
agent applies the previous config again, reports ``Degraded`` with ``try of NEW not confirmed
within D; reverted to OLD``, and does not apply NEW again until ``desiredConfig`` changes or
the force file is set.
"""

from __future__ import annotations

import logging

from mcd.agent.safety import bootretry, trymode
from mcd.agent.update.context import (
    Config,
    Context,
    SyncError,
    disruption_policies,
    start_drift_monitor,
)
from mcd.agent.update.transaction import Transaction, UpdateError
from mcd.cluster.api import ApiError
from mcd.cluster.events import Reason
from mcd.cluster.node import annotations_of
from mcd.host.errors import HostError
from mcd.host.lock import LockBusy, writer_lock
from mcd.model.disruption.policy import ActionType
from mcd.model.errors import ConfigError
from mcd.model.machineconfig import load_machine_config
from mcd.model.node.health import TRY_ANNOTATION, parse_duration
from mcd.model.planning.plan import UpdatePlan, make_plan
from mcd.model.vocabulary import Annotation

log = logging.getLogger(__name__)

CONFIRMED = "confirmed"
LOCK_WAIT = 60.0


def _error(message: str) -> Exception:
    return SyncError(message)


def begin(ctx: Context, plan: UpdatePlan, current: Config, desired: Config) -> bool:
    """Record the update as a try when the Node asks for one (before anything is written)."""
    value = annotations_of(ctx.writer.current()).get(TRY_ANNOTATION, "").strip()
    if not value or value == CONFIRMED:
        return False
    try:
        seconds = parse_duration(value)
    except ConfigError as e:
        raise _error(f"node annotation {TRY_ANNOTATION}: {e}") from e
    d = plan.diff
    needs_reboot = any(a.type is ActionType.REBOOT for a in plan.actions)
    if needs_reboot or d.os_update or d.kargs or d.kernel_type or d.extensions:
        raise _error(
            f"node annotation {TRY_ANNOTATION}: the update to {desired.name} needs a reboot; "
            "try mode covers rebootless updates"
        )
    trymode.begin(ctx.host.root, desired.name, current.name, current.document, seconds)
    log.info("Trying %s for %s: reverts to %s unless confirmed", desired.name, value, current.name)
    return True


def abandon(ctx: Context) -> None:
    """The try's update failed (and rolled back): nothing to try, nothing to revert."""
    trymode.clear(ctx.host.root)


def honour(ctx: Context, current: Config) -> None:
    """Confirm a try the Node confirmed; revert one whose deadline passed (SyncError)."""
    root = ctx.host.root
    try:
        state = trymode.load(root)
    except trymode.TryError as e:
        raise _error(str(e)) from e
    if state is None:
        return
    if state.config != current.name:  # the node moved on (an update, a revert by hand)
        trymode.clear(root)
        return
    if annotations_of(ctx.writer.current()).get(TRY_ANNOTATION, "").strip() == CONFIRMED:
        trymode.clear(root)
        ctx.metrics.try_results.labels("confirmed").inc()
        log.info("Try of %s confirmed", state.config)
        return
    if not state.expired():
        return
    _revert(ctx, current, state)


def _revert(ctx: Context, current: Config, state: trymode.TryState) -> None:
    root = ctx.host.root
    previous_doc = trymode.previous_document(root)
    previous = load_machine_config(previous_doc)
    plan = make_plan(current.mc, previous, disruption_policies(ctx))
    if ctx.drift.stop():  # the revert's own writes are no drift of the config on trial
        ctx.events.record(Reason.CONFIG_DRIFT_MONITOR_STOPPED, "Config Drift Monitor stopped")
    try:
        with writer_lock(root, f"mcd start: revert the try of {state.config}", LOCK_WAIT):
            Transaction(
                ctx.host, plan, current.document, previous_doc, preflight=False,
                skip_certificate_write=True, record=ctx.events.record,
            ).run()  # fmt: skip
    except (UpdateError, LockBusy, HostError) as e:
        raise _error(f"try of {state.config} not confirmed in time; revert failed: {e}") from e
    reason = f"try of {state.config} not confirmed in time; reverted to {state.previous}"
    bootretry.give_up(root, state.config, reason)  # not applied again while desired says so
    trymode.clear(root)
    ctx.metrics.try_results.labels("reverted").inc()
    start_drift_monitor(ctx, previous)  # watching the config the node is back on
    log.warning("%s", reason)
    ctx.events.record(Reason.TRY_REVERTED, reason)
    try:
        ctx.writer.set_annotations({Annotation.CURRENT_CONFIG: state.previous})
    except ApiError as e:
        log.warning("Could not set currentConfig of node %s: %s", ctx.node_name, e)
    raise _error(reason)
