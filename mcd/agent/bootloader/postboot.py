"""After the boot, on a host whose boot loader mcd drives: the managed drop-in is what the
config's kernel arguments make (a hand edit is drift), and the running kernel was booted with
every one of them (``/proc/cmdline``). rpm-ostree hosts are checked through ``rpm-ostree
kargs`` instead (:func:`mcd.agent.update.trigger.validate_current`)."""

from __future__ import annotations

import logging

from mcd.agent.update.handles import Node
from mcd.host.bootloader.kargs import booted_missing
from mcd.model.machineconfig import MachineConfig

log = logging.getLogger(__name__)


def kernel_arguments_problem(node: Node, mc: MachineConfig) -> str:
    """'' when the boot configuration and the booted kernel carry ``mc``'s kernel arguments
    (nothing to check on a host with no boot loader mcd drives), else the detail."""
    if node.ostree:
        return ""
    loader = node.bootloader()
    if loader is None:
        return ""
    problem = loader.dropin_problem(mc.kernel_arguments)
    if problem:
        return problem
    missing = booted_missing(node.root, mc.kernel_arguments)
    if missing:
        log.error("The running kernel was booted without kernel arguments %s", missing)
        return f"missing expected kernel arguments: [{' '.join(missing)}]"
    return ""
