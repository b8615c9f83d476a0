"""One sync of a booted agent: from the newest Node it knows to what the node does next.

The worker of :mod:`mcd.agent.daemon` decides when to sync and what to do with a failure;
this module decides what one sync does (upstream ``syncNode`` after its boot checks):

* with ``--drain-mode controller``, a drain or uncordon request for the current target
  that the drain controller has not answered yet is waited for (a request for a target no
  longer wanted is not: the update replaces it);
* an update when one is due (``desiredConfig``, ``desiredImage`` or the force file),
  else the OS's reboot wish reported and, in a slot the controller gave, the reboot
  (:mod:`mcd.agent.boot.osreboot`), else the Node corrected to what the node is
  (:mod:`mcd.agent.sync.level`).
"""

from __future__ import annotations

import logging

from mcd.agent.boot import osreboot
from mcd.agent.sync.level import settle, wants_update
from mcd.agent.update.context import Context
from mcd.agent.update.trigger import current_config, trigger_update
from mcd.cluster.api import Obj
from mcd.cluster.node import annotations_of
from mcd.model.vocabulary import FORCE_FILE, Annotation, drain_request, uncordon_request

log = logging.getLogger(__name__)


def drain_pending(node: Obj) -> bool:
    """The drain controller still owes an answer to a request for the current target."""
    annotations = annotations_of(node)
    wanted_drain = annotations.get(Annotation.DESIRED_DRAIN, "")
    target = annotations.get(Annotation.DESIRED_CONFIG, "")
    return wanted_drain in (
        drain_request(target),
        uncordon_request(target),
    ) and wanted_drain != annotations.get(Annotation.LAST_APPLIED_DRAIN, "")


def sync_node(ctx: Context, node: Obj, controller_drains: bool) -> None:
    """An update when one is due, else the level-triggered corrections; raises what the
    update or the check raised (the worker reports it and retries)."""
    if controller_drains and drain_pending(node):
        log.info(
            "A previously requested drain has not yet completed. Waiting for "
            "machine-config-controller to finish draining node."
        )
        return
    current = current_config(ctx, node)
    desired = wants_update(
        node, current.name, ctx.host.root.exists(FORCE_FILE), current.mc.ocl_image
    )
    if desired:
        trigger_update(ctx, node, current, desired)
    elif not osreboot.step(ctx, node):  # the OS's reboot wish; a reboot in the slot given
        settle(ctx, node, current)
