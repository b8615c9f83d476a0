"""The OS step of an update on a host that is not rpm-ostree's: the OS image through bootc on a
bootc host (:mod:`mcd.host.osupdate.bootc`), kernel arguments through the boot loader
(:mod:`mcd.host.bootloader.kargs`), nothing else.

Upstream logs ``updating the OS on non-CoreOS nodes is not supported`` and goes on to reboot;
here a changed field the host cannot apply refuses the update before anything is written
(the planner says so first: :mod:`mcd.model.planning.applicability`; this is the same rule
for a plan made without the host's support). The undo is the move back to the old
config's arguments; on bootc, back to the booted image (before the boot into the new one:
``bootc switch`` to it, bootc having no command that only drops a staged deployment) or
``bootc rollback`` (after it).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from mcd.agent.update import imagemode
from mcd.agent.update.events import os_finished, os_started
from mcd.agent.update.handles import Node
from mcd.cluster.events import Reason
from mcd.host.osupdate.bootc import Bootc
from mcd.model.planning import applicability
from mcd.model.planning.applicability import BOOTC
from mcd.model.planning.plan import UpdatePlan

log = logging.getLogger(__name__)

Emit = Callable[[list[tuple[Reason, str]]], None]


def refusal(node: Node, plan: UpdatePlan) -> str:
    """'' when ``node`` can apply every OS field the plan changes, else the reason."""
    support = node.support()
    missing = applicability.inapplicable(plan.old, plan.new, support)
    if missing and not support.known_os:  # a bare directory: files only, and said so
        log.warning("%s", applicability.skipped(plan.new.name, missing))
        return ""
    return applicability.refusal(plan.new.name, support, missing) if missing else ""


def _switches_image(node: Node, plan: UpdatePlan) -> bool:
    """bootc has work: the config's image changes (not the force file's forced update)."""
    return node.support().os_image == BOOTC and plan.old.os_image_url != plan.new.os_image_url


def needed(node: Node, plan: UpdatePlan) -> bool:
    """Whether bootc or the boot loader has work."""
    d = plan.diff
    if d.os_update and not d.kargs and not _switches_image(node, plan):
        log.info("Forced OS update: no OS image to update on this node (%s)", node.support().os)
    return d.kargs or _switches_image(node, plan)


def apply(node: Node, plan: UpdatePlan, emit: Emit) -> None:
    loader = node.bootloader()
    image = _switches_image(node, plan)
    if loader is None and not image:  # refused before: nothing here for the host
        return
    emit(os_started(plan))
    if image:
        Bootc(node.root, node.effects.runner).switch(plan.new.os_image_url)
    if loader is not None and plan.diff.kargs:
        loader.update(plan.old.kernel_arguments, plan.new.kernel_arguments)
    emit(os_finished(plan))


def undo(node: Node, plan: UpdatePlan, staged: str) -> None:
    """Undo the OS step: rpm-ostree's (what it staged), else bootc's and the boot loader's."""
    if node.ostree or staged:
        imagemode.undo_os(node.rpm, staged)
        return
    loader = node.bootloader()
    if loader is not None and plan.diff.kargs:
        loader.undo(plan.old.kernel_arguments, plan.new.kernel_arguments)
    if _switches_image(node, plan):
        bootc = Bootc(node.root, node.effects.runner)
        status = bootc.status()
        if status.booted is not None and status.booted.image == plan.new.os_image_url:
            bootc.rollback()  # the boot into the new image happened: the old one boots next
        elif status.staged is not None and status.booted is not None:
            bootc.restage(status.booted.image)
