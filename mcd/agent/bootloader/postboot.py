"""After the boot, on a host whose boot loader mcd drives: the managed drop-in is what the
config's kernel arguments make (a hand edit is drift), and the running kernel was booted with
every one of them (``/proc/cmdline``); on a bootc host, the booted image is the config's.
rpm-ostree hosts are checked through ``rpm-ostree status`` and ``rpm-ostree kargs`` instead
(:func:`mcd.agent.update.trigger.validate_current`)."""

from __future__ import annotations

import logging

from mcd.agent.update.handles import Node
from mcd.host.bootloader.kargs import booted_missing
from mcd.host.errors import HostError
from mcd.host.osupdate.bootc import Bootc
from mcd.model.machineconfig import MachineConfig
from mcd.model.planning.applicability import BOOTC
from mcd.model.text import goquote

log = logging.getLogger(__name__)


def boot_problem(node: Node, mc: MachineConfig) -> str:
    """'' when the booted OS is what ``mc`` says (image on bootc, kernel arguments), else
    the detail."""
    return image_problem(node, mc) or kernel_arguments_problem(node, mc)


def image_problem(node: Node, mc: MachineConfig) -> str:
    """On a bootc host: the booted image against ``osImageURL`` (upstream ``checkOS``'s words)."""
    if node.ostree or node.support().os_image != BOOTC or not mc.os_image_url:
        return ""
    try:
        booted = Bootc(node.root, node.effects.runner).booted_image()
    except HostError as e:
        return str(e)
    if booted != mc.os_image_url:
        return f"expected target osImageURL {goquote(mc.os_image_url)}, have {goquote(booted)}"
    return ""


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
