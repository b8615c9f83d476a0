"""``mcd firstboot-complete-machineconfig``: finish provisioning on first boot (upstream 1.12).

Reads the encapsulated MachineConfig written at install time, compares it with
what the node booted (image and kernel arguments), applies the difference with
the legacy action table, moves the file to ``.bak`` and reboots into the result.
"""

from __future__ import annotations

import dataclasses
import logging

from mcd.agent.update.handles import Node, document_of
from mcd.agent.update.transaction import Outcome, Transaction
from mcd.host.fs import fsops
from mcd.host.lock import writer_lock
from mcd.model.machineconfig import MachineConfig, empty_machine_config, load_machine_config
from mcd.model.planning.plan import make_plan

log = logging.getLogger(__name__)

ENCAPSULATED = "/etc/ignition-machine-config-encapsulated.json"


def firstboot_complete(
    node: Node, config_path: str = ENCAPSULATED, skip_reboot: bool = False
) -> Outcome:
    data = node.root.read_bytes(config_path)
    new = load_machine_config(data)
    with writer_lock(node.root, "mcd firstboot-complete-machineconfig"):
        return _complete(node, config_path, data, new, skip_reboot)


def _complete(
    node: Node, config_path: str, data: bytes, new: MachineConfig, skip_reboot: bool
) -> Outcome:
    root = node.root
    booted_image, kargs = new.os_image_url, new.kernel_arguments
    if node.ostree and node.rpm is not None:
        booted_image = node.rpm.booted_image()
        have = set(node.rpm.kargs_output().split())
        kargs = tuple(a for a in new.kernel_arguments if a in have)
    elif (loader := node.bootloader()) is not None and loader.dropin_problem(kargs):
        kargs = ()  # the boot loader does not carry them yet (GRUB's drop-in, grubby's entries)
    fips = node.fips_for(new)  # upstream setNodeFipsIntoMC: the node's FIPS mode
    old = dataclasses.replace(
        empty_machine_config(), os_image_url=booted_image, kernel_arguments=kargs, fips=fips
    )
    plan = make_plan(old, new, legacy=True, node_fips=fips, host=node.support())
    if plan.diff.is_empty():
        fsops.remove(root, config_path)
        log.info("skipping reboot since no changes were detected from %s to %s", old.name, new.name)
        return Outcome.DONE
    txn = Transaction(node, plan, document_of(old, None), data, skip_reboot=True, preflight=False)
    txn.run()
    if config_path == ENCAPSULATED:
        fsops.copy_preserving(root, config_path, config_path + ".bak")
        fsops.remove(root, config_path)
    if skip_reboot:
        return Outcome.REBOOT_PENDING
    node.effects.systemd.reboot(f"Completing firstboot provisioning to {new.name}")
    return Outcome.REBOOTING
