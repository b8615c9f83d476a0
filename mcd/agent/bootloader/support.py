"""The node tells the cluster what it can apply: :data:`HOST_SUPPORT_ANNOTATION` on its Node,
written at start when it changed, so the controller's pool condition and ``mcd plan`` name
the nodes that cannot take a config before a rollout reaches them."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from mcd.agent.update.context import Context
from mcd.cluster.api import ApiError
from mcd.model.planning.applicability import HOST_SUPPORT_ANNOTATION

log = logging.getLogger(__name__)


def publish(ctx: Context, annotations: Mapping[str, str]) -> None:
    support = ctx.host.support()
    value = support.annotation()
    log.info(
        "Host %s: OS image through %s, kernel arguments through %s, systemd %s",
        support.os or "(unknown OS)", support.os_image or "nothing",
        support.kernel_arguments or "nothing", support.systemd_version or "unknown",
    )  # fmt: skip
    if annotations.get(HOST_SUPPORT_ANNOTATION) == value:
        return
    try:
        ctx.writer.set_annotations({HOST_SUPPORT_ANNOTATION: value})
    except ApiError as e:  # the agent works without it; the controller then assumes CoreOS
        log.warning("Could not publish %s: %s", HOST_SUPPORT_ANNOTATION, e)
