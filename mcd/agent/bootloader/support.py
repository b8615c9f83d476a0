"""The node tells the cluster what it can apply: :data:`HOST_SUPPORT_ANNOTATION` on its Node,
written at start when it changed, so the controller's pool condition and ``mcd plan`` name
the nodes that cannot take a config before a rollout reaches them. The container runtime in
it is the one the kubelet reports, else the host's (:mod:`mcd.model.node.runtime`)."""

from __future__ import annotations

import logging

from mcd.agent.update.context import Context
from mcd.cluster.api import ApiError, Obj
from mcd.cluster.node import annotations_of
from mcd.host import runtime
from mcd.model.node.runtime import node_runtime_version
from mcd.model.planning.applicability import HOST_SUPPORT_ANNOTATION

log = logging.getLogger(__name__)


def publish(ctx: Context, node: Obj) -> None:
    annotations = annotations_of(node)
    choice = runtime.detect(ctx.host.root, node_runtime_version(node))
    support = ctx.host.support()
    if choice.name != support.container_runtime:  # the kubelet's report outranks the host's
        support = ctx.host.with_runtime(choice.name)
    value = support.annotation()
    log.info(
        "Host %s: OS image through %s, kernel arguments through %s, systemd %s",
        support.os or "(unknown OS)", support.os_image or "nothing",
        support.kernel_arguments or "nothing", support.systemd_version or "unknown",
    )  # fmt: skip
    log.info("Container runtime: %s, from %s", choice.name or "cri-o", choice.source)
    for warning in runtime.registry_warnings(ctx.host.root, choice):
        log.warning("%s", warning)
    if annotations.get(HOST_SUPPORT_ANNOTATION) == value:
        return
    try:
        ctx.writer.set_annotations({HOST_SUPPORT_ANNOTATION: value})
    except ApiError as e:  # the agent works without it; the controller then assumes CoreOS
        log.warning("Could not publish %s: %s", HOST_SUPPORT_ANNOTATION, e)
