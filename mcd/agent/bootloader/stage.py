"""The OS image staged before the drain: an update that changes the OS image pulls it while
the node still runs its pods, so the drain covers only the switch and the reboot.

Upstream drains first and pulls inside ``applyOSChanges`` (``updateLayeredOS``: the
rebase with its backoff, ``ImagePulledFromRegistry`` around it). Here the pull comes first,
through the tools' own download-only modes: ``rpm-ostree rebase --download-only`` (the
image's layers in the OSTree repository, no deployment) and ``bootc switch --download-only``
(a locked staged deployment, not queued for the next boot). The OS step after the drain
is then the deploy alone, its layers found on disk. Before the pull, the disk space check
(:mod:`mcd.host.osupdate.space`); a stage that fails or would not fit fails the update
with its reason and nothing is drained.

Crash safety: a download deploys nothing the next boot takes (rpm-ostree stages no
deployment; bootc's is locked), and a pending deployment left by an earlier run is dropped
first (``rpm-ostree cleanup -p``, as upstream before its rebase). A crash while staging
leaves the node on its current deployment; the next run stages again, the layers pulled
so far reused. ``MCD_STAGE_BEFORE_DRAIN=0`` turns staging off (the pull then happens
after the drain, as upstream).
"""

from __future__ import annotations

import logging
import os
import time

from mcd.agent.report.status import node_state
from mcd.agent.update import progress
from mcd.agent.update.context import Context, SyncError
from mcd.host.errors import HostError
from mcd.host.osupdate import space
from mcd.host.osupdate.bootc import Bootc
from mcd.model.planning.applicability import BOOTC
from mcd.model.planning.plan import UpdatePlan
from mcd.model.vocabulary import NodeState

log = logging.getLogger(__name__)

ENABLED_ENV = "MCD_STAGE_BEFORE_DRAIN"


def enabled() -> bool:
    return os.environ.get(ENABLED_ENV, "1").strip().lower() not in ("0", "false", "no")


def staging_reason(image: str) -> str:
    """The Node's ``reason`` while the image is pulled (state Working)."""
    return f"staging OS image {image}"


def before_drain(ctx: Context, plan: UpdatePlan) -> bool:
    """Pull and stage the plan's new OS image, before the drain is asked for; True when
    something was staged. A failure raises :class:`SyncError` (nothing drained)."""
    image = plan.new.os_image_url
    if not (plan.diff.os_update and image and enabled()):
        return False
    host = ctx.host
    rpm = host.rpm if host.ostree else None
    bootc = host.support().os_image == BOOTC and not host.ostree
    if rpm is None and not bootc:
        return False
    tool = Bootc(host.root, host.effects.runner)
    try:
        booted = rpm.booted_image() if rpm is not None else tool.booted_image()
    except HostError as e:
        raise SyncError(f"cannot stage OS image {image}: {e}") from e
    if booted == image and not plan.new.ocl_image:
        return False  # nothing to pull (a forced update re-applies the booted image)
    refused = space.refusal(host.root, image)
    if refused:
        log.error("%s", refused)
        progress.image_pull(ctx, image, refused)
        raise SyncError(refused)
    log.info("Staging OS image %s before the drain", image)
    if node_state(ctx.writer.current()) == NodeState.WORKING:
        ctx.status.progress(staging_reason(image))
    progress.image_pull(ctx, image)
    started = time.monotonic()
    try:
        if rpm is not None:
            rpm.cleanup_pending()  # a deployment left by an interrupted run goes first
            rpm.download(image)
        else:
            tool.download(image)
    except HostError as e:  # upstream's words for a failed pull ("failed to update OS to ...")
        log.error("Staging OS image %s failed; the node is not drained: %s", image, e)
        progress.image_pull(ctx, image, str(e))
        raise SyncError(str(e)) from e
    log.info("Staged OS image %s in %.1fs; the drain follows", image, time.monotonic() - started)
    progress.image_pull(ctx, image, done=True)
    if node_state(ctx.writer.current()) == NodeState.WORKING:
        ctx.status.progress("")
    return True
