"""The OS step of an update on a host that is not rpm-ostree's: kernel arguments through the
boot loader (:mod:`mcd.host.bootloader.kargs`), nothing else.

Upstream logs ``updating the OS on non-CoreOS nodes is not supported`` and goes on to reboot;
here a changed field the host cannot apply refuses the update before anything is written
(the planner says so first: :mod:`mcd.model.planning.applicability`; this is the same rule
for a plan made without the host's support). The undo is the move back to the old
config's arguments.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from mcd.agent.update import imagemode
from mcd.agent.update.events import os_finished, os_started
from mcd.agent.update.handles import Node
from mcd.cluster.events import Reason
from mcd.model.planning import applicability
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


def needed(node: Node, plan: UpdatePlan) -> bool:
    """Whether the boot loader has work (the kernel arguments changed)."""
    d = plan.diff
    if d.os_update and not d.kargs:  # the force file on a host with no OS image
        log.info("Forced OS update: this node has no OS image to update (%s)", node.support().os)
    return d.kargs


def apply(node: Node, plan: UpdatePlan, emit: Emit) -> None:
    loader = node.bootloader()
    if loader is None:  # refused before: the plan changes no kernel arguments here
        return
    emit(os_started(plan))
    loader.update(plan.old.kernel_arguments, plan.new.kernel_arguments)
    emit(os_finished(plan))


def undo(node: Node, plan: UpdatePlan, staged: str) -> None:
    """Undo the OS step: rpm-ostree's (what it staged), else the boot loader's."""
    if node.ostree or staged:
        imagemode.undo_os(node.rpm, staged)
        return
    loader = node.bootloader()
    if loader is not None and plan.diff.kargs:
        loader.undo(plan.old.kernel_arguments, plan.new.kernel_arguments)
