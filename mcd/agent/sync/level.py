"""Level-triggered sync: when no update is due, make the Node say what the node is.

A sync compares the whole wanted state with what the Node says and corrects what
differs, instead of acting only on a change of ``desiredConfig``:

* ``currentConfig`` is the on-disk ``currentconfig`` (a runbook that patches the
  annotation by hand, or a Node registered again with no annotations, is corrected);
* ``state`` is ``Done`` with an empty ``reason`` when the node validates against its
  config, and ``Degraded`` with the validation's reason when it does not (a hand-set
  ``Done`` on a drifted node is not believed);
* while the certificate writer's last sync failed, ``state`` stays ``Degraded`` with
  its reason (upstream ``handleControllerConfigErr``): the writer wakes the worker
  once a sync succeeds, and only then is the node checked and set ``Done``;
* a cordon mcd made (or a ``drain-<config>`` request to the drain controller) is lifted.

Nothing is written when the Node already says all this (no request at all).
"""

from __future__ import annotations

import logging

from mcd.agent.update import gating, progress, trying
from mcd.agent.update.context import Config, Context, SyncError, start_drift_monitor
from mcd.agent.update.trigger import refuse_done_if_owed, validate_current
from mcd.cluster.api import Obj
from mcd.cluster.drain import DrainError, cordoned_by
from mcd.cluster.events import Reason
from mcd.cluster.node import annotations_of
from mcd.model.text import goquote
from mcd.model.vocabulary import Annotation, NodeState, uncordon_request

log = logging.getLogger(__name__)


def differences(node: Obj, current: str, image: str = "") -> list[str]:
    """What the Node says that a node settled on ``current`` would not ('' list: nothing)."""
    a = annotations_of(node)
    found = []
    if a.get(Annotation.CURRENT_IMAGE, "") != image:
        have = goquote(a.get(Annotation.CURRENT_IMAGE, ""))
        found.append(f"currentImage {have} but on disk {goquote(image)}")
    if a.get(Annotation.CURRENT_CONFIG, "") != current:
        have = goquote(a.get(Annotation.CURRENT_CONFIG, ""))
        found.append(f"currentConfig {have} but on disk {goquote(current)}")
    state = a.get(Annotation.STATE) or ""
    if state != NodeState.DONE:
        found.append(f"state {goquote(state)}")
    if a.get(Annotation.REASON):
        found.append("a reason set")
    return found


def cordoned_by_update(node: Obj, current: str) -> bool:
    a = annotations_of(node)
    wanted_drain = a.get(Annotation.DESIRED_DRAIN, "")
    return cordoned_by(a) is not None or bool(
        wanted_drain and wanted_drain != uncordon_request(current)
    )


def settle(ctx: Context, node: Obj, current: Config) -> None:
    """Correct the Node of a node that has no update to do (see the module docstring)."""
    trying.honour(ctx, current)  # a try confirmed, or reverted at its deadline
    wrong = differences(node, current.name, current.mc.ocl_image)
    if ctx.status.failing and not wrong:  # Done by hand while the agent knows otherwise
        wrong.append(f"Done, while the agent last reported {goquote(ctx.status.failing)}")
    if cordoned_by_update(node, current.name):
        log.info("Node %s is still cordoned for an update that is over; uncordoning",
                 ctx.node_name)  # fmt: skip
        try:
            ctx.drainer.uncordon(current.name)
        except DrainError as e:
            raise SyncError(str(e)) from e
    if ctx.status.certificates_failing:
        raise SyncError(ctx.status.certificates_failing)
    if not wrong:
        if gating.clear_stale(ctx, current.name):  # Done already; only the gate state is old
            ctx.writer.set_annotations({})
        return
    log.info("Node %s says %s; checking the node against %s",
             ctx.node_name, ", ".join(wrong), current.name)  # fmt: skip
    refuse_done_if_owed(ctx, current.name)
    problem = validate_current(ctx, current.mc)
    if problem:
        start_drift_monitor(ctx, current.mc, problem)
        raise SyncError(problem)
    ctx.events.record(
        Reason.NODE_DONE, f"Setting node {ctx.node_name}, currentConfig {current.name} to Done"
    )
    start_drift_monitor(ctx, current.mc)
    gating.clear_stale(ctx, current.name)  # rolled back: the failed gate of another config
    ctx.status.done(current.name, current.mc.ocl_image)
    progress.recovered(ctx)
    progress.irreconcilable(ctx, current.mc)
    log.info("Node %s corrected: Done on %s", ctx.node_name, current.name)


def wants_update(node: Obj, current_name: str, force: bool, current_image: str = "") -> str:
    """The desired config name when a sync has work to do, else ''."""
    annotations = annotations_of(node)
    desired = annotations.get(Annotation.DESIRED_CONFIG, "")
    if not desired:
        return ""
    state = annotations.get(Annotation.STATE) or NodeState.DONE
    same_image = annotations.get(Annotation.DESIRED_IMAGE, "") == current_image
    if desired == current_name and same_image and not force:
        if state != NodeState.DONE:  # settled by :func:`mcd.agent.sync.level.settle`
            log.warning("current+desiredConfig is %s but state is %s", desired, state)
        return ""
    return desired
