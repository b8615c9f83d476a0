"""The health gate of a reboot update, after the boot into the new deployment.

The update's journal waits in ``awaiting-reboot`` until the node booted the staged
deployment (any new boot, for a reboot update without an OS change: the journal and its
backups are kept through the reboot instead of ``currentconfig`` being promoted before it);
then, before ``currentconfig`` is promoted, the gate runs. A failed gate rolls the node back
the whole way: the previous files and units from the journal's backups, the OS to the
previous deployment (``rpm-ostree rollback``) when it changed, and a reboot into them. Each
failed boot is counted (:mod:`mcd.agent.safety.gateboots`).
"""

from __future__ import annotations

import logging

from mcd.agent.safety import owed
from mcd.agent.safety.gateboots import record_failure
from mcd.agent.safety.health import HealthGate
from mcd.agent.update import failpoints
from mcd.agent.update.journal import Phase
from mcd.agent.update.transaction import Outcome, Transaction, UpdateError
from mcd.host.systemd.manager import SystemdError
from mcd.model.node.health import boots_exhausted, rolled_back

log = logging.getLogger(__name__)


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
