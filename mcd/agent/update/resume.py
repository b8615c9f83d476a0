"""Recovery of an update a killed agent left in the journal (:mod:`mcd.agent.update.journal`).

An interrupted ``applying`` update rolls forward from its first step not done (every step is
idempotent), one ``rolling-back`` finishes its rollback (a failed health gate's included: the
files come back and the actions run again), one ``awaiting-reboot`` asks for the reboot again
or, once the staged deployment booted (any boot, for a reboot update without an OS change),
runs the health gate and promotes ``currentconfig`` (or rolls back:
:mod:`mcd.agent.update.postboot`).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable

from mcd.agent.safety.health import HealthGate
from mcd.agent.update import postboot
from mcd.agent.update.handles import Node
from mcd.agent.update.journal import Journal, Phase, journal_configs
from mcd.agent.update.transaction import Outcome, Transaction, UpdateError
from mcd.host.errors import HostError
from mcd.model.disruption.policy import Action, ActionType
from mcd.model.planning.plan import make_plan
from mcd.model.text import goquote

log = logging.getLogger(__name__)


def recover(
    node: Node,
    *,
    skip_reboot: bool = False,
    force: bool = False,
    before_reboot: Callable[[str], None] | None = None,
    gate: HealthGate | None = None,
    soft_rebooted: bool = False,
) -> Outcome | None:
    """Finish what a killed agent left in the journal; None when there is nothing to do.
    ``soft_rebooted``: a soft reboot (same boot id) was proven since the update asked for it
    (:mod:`mcd.agent.bootloader.softreboot`)."""
    loaded = Journal(node.root).load()
    if loaded is None:
        return None
    entry, old_doc, new_doc = loaded
    old, new = journal_configs(old_doc, new_doc)
    plan = make_plan(
        old, new, force=entry.force or force, legacy=True, node_fips=node.fips_for(new)
    )
    actions = tuple(Action(ActionType(t), s or None) for t, s in entry.actions)
    plan = dataclasses.replace(plan, actions=actions)
    txn = Transaction(
        node, plan, old_doc, new_doc, skip_reboot=skip_reboot, preflight=False,
        before_reboot=before_reboot,
    )  # fmt: skip
    txn.entry = entry
    log.info("Found an interrupted update %s -> %s in phase %s", entry.old, entry.new, entry.phase)
    if entry.phase is Phase.ROLLING_BACK:  # a failed gate's too: back to the old deployment
        return postboot.finish_rollback(txn)
    if entry.phase is Phase.AWAITING_REBOOT:
        if node.boot_id() == entry.boot_id and not soft_rebooted:
            return txn._reboot()  # the reboot never happened: ask again (a full one)
        booted = node.rpm.status().booted.checksum if node.rpm and entry.staged else ""
        if booted != entry.staged:  # ('' for a reboot update without an OS change)
            log.warning(
                "Booted deployment %s is not the staged %s for %s",
                booted[:12], entry.staged[:12], goquote(new.name),
            )  # fmt: skip
            Journal(node.root).clear()
            return Outcome.BOOTED_OLD
        if node.rpm is not None and entry.staged and new.kernel_arguments:
            try:
                node.rpm.check_kargs(new.kernel_arguments)
            except HostError as e:  # booted the right deployment with the wrong command line
                raise UpdateError(str(e)) from e
        if gate is not None and gate.settings.enabled:
            return postboot.after_boot(txn, gate)
        txn._commit()
        return Outcome.DONE
    # APPLYING: roll forward from the first step not done (every step is idempotent)
    entry.started = [s for s in entry.started if s in entry.done]
    return txn._apply()
