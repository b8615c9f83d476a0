"""The MachineConfigNode's ``status.irreconcilableChanges`` (upstream
``IrreconcilableReporterImpl.CheckReportIrreconcilableDifferences``): after each sync that
leaves the node Done, what the target config changes, against the config the node was
installed with (``/etc/mcs-machine-config-content.json``, served by the
machine-config-server), in the sections only a new node gets. A failure is logged, never
the end of a sync (upstream logs it)."""

from __future__ import annotations

import json
import logging

from mcd.cluster.api import Obj
from mcd.cluster.mcn import MachineConfigNodeReporter
from mcd.host.rootfs import Root
from mcd.model.errors import ConfigError
from mcd.model.ignition.served import CONTENT
from mcd.model.machineconfig import MachineConfig, machine_config_from_object
from mcd.model.planning.overrides import irreconcilable_changes

log = logging.getLogger(__name__)

FIELD = "irreconcilableChanges"


def install_time_config(root: Root) -> MachineConfig | None:
    """The MachineConfig the node was installed with, or None (logged) when there is none
    to read."""
    try:
        raw = root.read_bytes(CONTENT)
    except OSError:
        log.info(
            "Error updating MCN with the irreconcilable report: error generating the "
            "irreconcilable differences list of changes. cannot locate and read the "
            "install-time configuration"
        )
        return None
    try:
        return machine_config_from_object(json.loads(raw), "install-time")
    except (ValueError, ConfigError) as e:
        log.warning("Cannot read the install-time configuration %s: %s", CONTENT, e)
        return None


def report(
    reporter: MachineConfigNodeReporter, node: Obj, root: Root, target: MachineConfig
) -> None:
    """Write the report for ``target`` (removed when there is no difference)."""
    base = install_time_config(root)
    if base is None:
        return
    changes = irreconcilable_changes(base, target)
    if changes:
        log.info("Irreconcilable changes against the install-time config: %s",
                 ", ".join(c["fieldPath"] for c in changes))  # fmt: skip
    reporter.set_status_fields(node, {FIELD: changes or None})
