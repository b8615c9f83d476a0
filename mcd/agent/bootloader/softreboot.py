"""Soft reboots: ``systemctl soft-reboot`` when an update needs a reboot but not a new kernel
(:mod:`mcd.model.planning.rebootkind` decides), proven afterwards, else a full reboot.

A soft reboot is chosen only when no kernel, initrd or kernel argument changes (so nothing is
staged for a boot loader to pick up). Before asking, the agent
records the manager's ``SoftRebootsCount`` and the boot id in :data:`RECORD`. After the soft
reboot the reboot owed (:mod:`mcd.agent.safety.owed`) is still due by its boot id, which a soft
reboot keeps; it counts as done only when the boot id is unchanged (a userspace restart on the
same kernel) AND systemd counts one more soft reboot, and the config is then validated as after
any boot. Anything else (the agent restarted before the soft reboot happened, systemd without
the counter) leaves the reboot owed, and the owed reboot is a full one.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping

from mcd.agent.safety import owed
from mcd.agent.update import gating
from mcd.agent.update.context import Context
from mcd.agent.update.handles import Node
from mcd.host.errors import HostError
from mcd.host.fs import fsops
from mcd.host.fs.sealing import STATE_FILE_MODE
from mcd.host.systemd.manager import SystemdError
from mcd.model.planning.plan import UpdatePlan
from mcd.model.planning.rebootkind import SOFT_REBOOT_ANNOTATION, RebootKind, soft_reboot_allowed

log = logging.getLogger(__name__)

RECORD = "/etc/machine-config-daemon/soft-reboot.json"


def allowed(ctx: Context, pool: Mapping[str, str] | None = None) -> bool:
    """The setting: the Node's own ``mcd-project.github.io/soft-reboot``, else its pool's
    (``pool``: the pool's annotations when the caller has read them)."""
    node = ctx.writer.current()
    meta = node.get("metadata") or {}
    mine = (meta.get("annotations") or {}).get(SOFT_REBOOT_ANNOTATION)
    if mine is not None:
        return soft_reboot_allowed(str(mine))
    pool = gating.pool_annotations(ctx, meta) if pool is None else pool
    return soft_reboot_allowed(str(pool.get(SOFT_REBOOT_ANNOTATION)))


def chosen(plan: UpdatePlan) -> bool:
    return plan.reboot_choice.kind is RebootKind.SOFT


def rationale(plan: UpdatePlan) -> str:
    verb = "soft-reboot" if chosen(plan) else "reboot"
    return f"Node will {verb} into config {plan.new.name}"


def issue(node: Node, plan: UpdatePlan, rationale: str) -> None:
    """Ask systemd for the reboot: a soft one when chosen and countable, else a full one."""
    systemd = node.effects.systemd
    if chosen(plan):
        count = systemd.soft_reboots()
        if count is not None:
            _save(node, {"config": plan.new.name, "bootID": node.boot_id(), "softReboots": count})
            try:
                systemd.reboot(rationale, soft=True)
                log.info("Soft reboot requested (soft reboots so far: %d)", count)
                return
            except SystemdError as e:
                log.warning("Soft reboot refused (%s); rebooting fully instead", e)
        else:
            log.warning("systemd does not count soft reboots here; rebooting fully instead")
        clear(node)
    systemd.reboot(rationale)


def settle(node: Node, record: owed.Owed | None) -> str:
    """At start: when the reboot owed was a soft reboot that happened, clear it and return the
    proof (for the log and an Event; the update's journal then counts it as the boot it waits
    for); '' otherwise (the owed reboot stays due)."""
    saved = _load(node)
    if saved is None:
        return ""
    if record is None or saved.get("config") != record.config:
        clear(node)  # a full boot happened since, or another update owes its own
        return ""
    try:
        now = node.effects.systemd.soft_reboots()
    except SystemdError:
        now = None
    before = saved.get("softReboots")
    boot = node.boot_id()
    if now is None or not isinstance(before, int) or now <= before or boot != saved.get("bootID"):
        log.warning("The soft reboot into %s did not happen; a full reboot follows", record.config)
        clear(node)
        return ""
    clear(node)
    owed.clear(node.root)
    return (
        f"Soft reboot into config {record.config} done: boot id {boot} unchanged, "
        f"soft reboots {before} -> {now}"
    )


def clear(node: Node) -> None:
    fsops.remove_file(node.root, RECORD)


def _save(node: Node, data: Mapping[str, object]) -> None:
    fsops.write_file(node.root, RECORD, json.dumps(data).encode(), STATE_FILE_MODE)


def _load(node: Node) -> dict[str, object] | None:
    try:
        data = json.loads(node.root.read_bytes(RECORD))
    except FileNotFoundError:
        return None
    except (OSError, HostError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
