"""The health gate of a reboot update, after the boot into the new deployment.

The update's journal waits in ``awaiting-reboot`` until the node booted the staged
deployment (any new boot, for a reboot update without an OS change: the journal and its
backups are kept through the reboot instead of ``currentconfig`` being promoted before it);
then, before ``currentconfig`` is promoted, the gate runs. A failed gate rolls the node back
the whole way: the previous files and units from the journal's backups, the OS to the
previous deployment (``rpm-ostree rollback``) when it changed, and a reboot into them.
Every failed boot into a config is counted in
``/etc/machine-config-daemon/health-gate-boots.json`` (one count per boot id, so a restarted
agent does not count twice; a failed rebootless gate counts once too); once ``max_boots``
gates of one config failed, the update to it is refused (Degraded) instead of tried again: no
reboot loop. A new desired config starts a new count; the force file clears it.
"""

from __future__ import annotations

import json
import logging

from mcd.agent import failpoints, owed
from mcd.agent.health import HealthGate, last_verdict
from mcd.agent.journal import Phase
from mcd.agent.transaction import Outcome, Transaction, UpdateError
from mcd.host import fsops
from mcd.host.errors import HostError
from mcd.host.rootfs import Root
from mcd.host.sealing import STATE_FILE_MODE
from mcd.host.systemd import SystemdError
from mcd.model.errors import ConfigError
from mcd.model.health import BootCount, boot_count_of, boots_exhausted, rolled_back

log = logging.getLogger(__name__)

BOOTS_PATH = "/etc/machine-config-daemon/health-gate-boots.json"


def load_count(root: Root) -> BootCount:
    try:
        doc = json.loads(root.read_bytes(BOOTS_PATH))
        return boot_count_of(doc if isinstance(doc, dict) else {})
    except FileNotFoundError:
        return BootCount("")
    except (OSError, HostError, ValueError, ConfigError) as e:
        log.warning("Ignoring unreadable %s (%s); counting afresh", BOOTS_PATH, e)
        return BootCount("")


def record_failure(root: Root, config: str, attempt: str) -> BootCount:
    count = load_count(root).add(config, attempt)
    fsops.write_file(root, BOOTS_PATH, json.dumps(count.as_dict()).encode(), STATE_FILE_MODE)
    return count


def clear(root: Root) -> None:
    if root.exists(BOOTS_PATH):
        fsops.remove(root, BOOTS_PATH)


def refused(root: Root, config: str, max_boots: int) -> str:
    """The reason an update to ``config`` is not tried again, or ''."""
    count = load_count(root)
    if count.config != config or not count.exhausted(max_boots):
        return ""
    last = verdict_reason(root) or "see the HealthGateFailed events"
    return boots_exhausted(config, count.boots, last)


def verdict_reason(root: Root) -> str:
    """The failed check of the last gate, as its reason said it."""
    doc = last_verdict(root) or {}
    checks = doc.get("checks")
    for check in checks if isinstance(checks, list) else []:
        if isinstance(check, dict) and check.get("status") == "failed":
            note = f": {check.get('note')}" if check.get("note") else ""
            return f"check {check.get('name')} failed{note}"
    return ""


def after_boot(txn: Transaction, gate: HealthGate) -> Outcome:
    """Run the gate in the boot into ``txn.new``: commit when it passes, else roll back and
    reboot into the previous deployment (or stop, once the boots are used up)."""
    node, new = txn.node, txn.new
    verdict = gate.run(new)
    if verdict.ok:
        txn._commit()
        return Outcome.DONE
    reason = verdict.reason()
    boot_id = node.boot_id()
    count = record_failure(node.root, new.name, boot_id)
    log.error("Health gate failed in boot %d into %s: %s", count.boots, new.name, reason)
    if count.boots > gate.settings.max_boots:  # counted already: never another reboot
        raise UpdateError(boots_exhausted(new.name, count.boots, reason), "gate")
    if gate.on_rollback is not None:
        gate.on_rollback(rolled_back(reason, txn.old.name), "reboot")
    txn.entry.phase, txn.entry.error = Phase.ROLLING_BACK, reason
    txn.journal.save(txn.entry)
    failpoints.reach("gate-rollback")
    return finish_rollback(txn)


def finish_rollback(txn: Transaction) -> Outcome:
    """Undo the update; when that made the previous deployment the next boot's (the gate
    failed after the boot into the new one), reboot into it."""
    node = txn.node
    txn.rollback()  # files from the backups, the OS to the previous deployment
    if not _previous_pending(txn):
        return Outcome.ROLLED_BACK
    owed.owe(node.root, txn.old.name, node.boot_id())  # a killed agent asks for it again
    rationale = f"Node will reboot into config {txn.old.name} (health gate failed)"
    if txn.before_reboot is not None:
        txn.before_reboot(rationale)
    failpoints.reach("gate-reboot")
    try:
        node.effects.systemd.reboot(rationale)
    except SystemdError as e:
        raise UpdateError(
            f"reboot command failed, something is seriously wrong: {e}", "reboot"
        ) from e
    log.info("initiating reboot: %s", rationale)
    return Outcome.REBOOTING


def _previous_pending(txn: Transaction) -> bool:
    """Whether the rollback needs a boot to take effect: the OS went back to the previous
    deployment, or (a reboot update without an OS change) the new files were booted with."""
    rpm, entry = txn.node.rpm, txn.entry
    if not entry.staged:
        return entry.reboot and txn.node.boot_id() != entry.boot_id
    if rpm is None:
        return False
    deployments = rpm.status().deployments
    return bool(deployments) and not deployments[0].booted
