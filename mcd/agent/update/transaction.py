"""The update transaction: move a node from one MachineConfig to another, or not at all.

Steps, in upstream order: files and units (with stale data removal), SSH keys
and password, OS changes through rpm-ostree, the post-config actions, then the
commit (``/etc/machine-config-daemon/currentconfig``). Each step has an undo;
on any error the completed steps are undone in reverse order, as upstream.

Beyond upstream, a write-ahead journal (:mod:`mcd.agent.update.journal`) makes the
transaction survive a crash: :func:`recover` rolls an interrupted update
forward (every step is idempotent) or finishes its rollback. ``currentconfig``
is promoted only when the booted deployment is the one the update staged;
until then the journal waits in ``awaiting-reboot``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from enum import StrEnum
from functools import partial

from mcd.agent.bootloader import osstep, softreboot
from mcd.agent.safety import owed
from mcd.agent.safety.health import HealthGate
from mcd.agent.update import events as update_events
from mcd.agent.update import failpoints, imagemode
from mcd.agent.update.handles import OSTREE_BOOTED, Node
from mcd.agent.update.journal import Entry, Journal, Phase
from mcd.agent.update.reapply import rerun_actions
from mcd.cluster.events import Reason
from mcd.host.errors import HostError
from mcd.host.fs.sealing import seal_state
from mcd.host.ondisk.validation import validate_on_disk
from mcd.host.systemd.manager import SystemdError
from mcd.model.disruption.policy import ActionType
from mcd.model.node.health import rolled_back
from mcd.model.planning.actions import executed_actions
from mcd.model.planning.plan import UpdatePlan

log = logging.getLogger(__name__)


class UpdateError(Exception):
    """The update failed; every completed step was rolled back. The message is for the Node;
    ``step`` names the step that failed (``os``, ``reboot``, ...) when known."""

    def __init__(self, message: str, step: str = "") -> None:
        super().__init__(message)
        self.step = step


class Outcome(StrEnum):
    DONE = "done"  # on the new config, currentconfig promoted
    REBOOTING = "rebooting"  # the reboot was queued; promotion happens after it
    REBOOT_PENDING = "reboot-pending"  # a reboot is needed but was skipped on request
    ROLLED_BACK = "rolled-back"  # back on the old config
    BOOTED_OLD = "booted-old"  # the node came back on the old deployment: retry the update


class Step(StrEnum):
    FILES = "files"
    PASSWD = "passwd"
    OS = "os"
    ACTIONS = "actions"
    GATE = "gate"


class Transaction:
    def __init__(
        self,
        node: Node,
        plan: UpdatePlan,
        old_doc: bytes,
        new_doc: bytes,
        *,
        skip_reboot: bool = False,
        skip_certificate_write: bool = False,
        preflight: bool = True,
        before_reboot: Callable[[str], None] | None = None,
        offline_root: bool = False,
        record: update_events.Record | None = None,
        gate: HealthGate | None = None,
    ) -> None:
        """``offline_root``: no systemd runs the root (``once-from`` into a directory):
        reload, restart, daemon-reload are recorded as skipped instead of failing."""
        self.node = node
        self.gate = gate
        """Run after the actions of a rebootless update; a failed gate rolls it back."""
        self.offline_root = offline_root
        self.skipped: list[str] = []
        self.before_reboot = before_reboot
        self.record = record
        self.plan = plan
        self.old, self.new = plan.old, plan.new
        self.old_doc, self.new_doc = old_doc, new_doc
        self.skip_reboot = skip_reboot
        self.skip_certificate_write = skip_certificate_write
        self.preflight = preflight and not plan.force
        self.journal = Journal(node.root)
        self.entry = Entry(
            self.old.name,
            self.new.name,
            actions=[[str(a.type), a.service or ""] for a in plan.actions],
            force=plan.force,
        )

    # -- the forward path -----------------------------------------------------------------

    def run(self) -> Outcome:
        if not self.plan.reconcilable:
            raise UpdateError(self.plan.reason)
        if self.preflight:
            report = validate_on_disk(self.old, self.node.root, self.node.effects.systemd)
            if not report.ok:
                raise UpdateError(report.reasons()[0])
        try:
            ostree = self.node.root.exists(OSTREE_BOOTED)
            self.node.effects.check_targets(
                self.new.ignition, ostree=ostree, old=self.old.ignition, force=self.plan.force
            )
        except HostError as e:
            raise UpdateError(str(e)) from e
        log.info("Starting update from %s to %s", self.old.name, self.new.name)
        self.entry.boot_id = self.node.boot_id()
        steps = self._steps()
        if steps:  # the first step's start goes with the journal's first record
            self.entry.started.append(steps[0][0].value)
        fx, old, new = self.node.effects, self.old.ignition, self.new.ignition
        record = partial(fx.record_undo, old, new, force=self.plan.force)
        try:  # (a full state directory) nothing was written, nothing is left: say where
            self.journal.begin(self.entry, self.old_doc, self.new_doc, record)
            failpoints.reach("begin")
        except (HostError, OSError) as e:
            self.journal.discard()
            raise UpdateError(failure_reason(e)) from e
        return self._apply()

    def _apply(self) -> Outcome:
        """Run the steps not done. A step's start is recorded (durably) before it runs and
        its end after: one journal write carries both a step's end and the next step's
        start (nothing happens between them), the first start goes with the journal's
        first record. A crash before the end is recorded runs the step again (every step
        is idempotent); a failure rolls back every step recorded as started."""
        current = ""
        try:
            steps = self._steps()
            for i, (step, apply) in enumerate(steps):
                current = step if step is not Step.GATE else current  # a gate's error says so
                if step.value not in self.entry.started:  # (else recorded with the last write)
                    self.entry.started.append(step.value)
                    self.journal.save(self.entry)
                apply()
                self.entry.done.append(step.value)
                failpoints.reach(step)
                if i + 1 < len(steps):
                    self.entry.started.append(steps[i + 1][0].value)
                self.journal.save(self.entry)
            return self._finish()
        except Exception as e:  # anything at all: roll back, never leave the node half-updated
            if isinstance(e, UpdateError) and e.step == "reboot":
                raise  # rolled back already (a second rollback would undo the first one's work)
            reason = failure_reason(e)
            log.error("Update to %s failed, rolling back: %s", self.new.name, reason)
            self.entry.phase, self.entry.error = Phase.ROLLING_BACK, reason
            try:
                self.journal.save(self.entry)
            except HostError as full:  # (ENOSPC) roll back all the same, from memory
                log.error("%s", full)
            if isinstance(e, UpdateError) and e.step == Step.GATE:
                current = Step.GATE  # (only the gate's own failure is the gate's)
            try:
                self.rollback()
            except UpdateError as undo:
                raise UpdateError(f"{reason}; {undo}", current) from e
            if current == Step.GATE:
                reason = rolled_back(reason, self.old.name)
            raise UpdateError(reason, current) from e

    def _steps(self) -> list[tuple[Step, Callable[[], None]]]:
        steps = [(Step.FILES, self._files)]
        if self.plan.diff.passwd:
            steps.append((Step.PASSWD, self._passwd))
        if self._os_work():
            steps.append((Step.OS, self._os))
        steps.append((Step.ACTIONS, self._actions))
        if self.gate is not None and self.gate.settings.enabled:
            steps.append((Step.GATE, self._gate))
        return [(s, fn) for s, fn in steps if s.value not in self.entry.done]

    def _files(self) -> None:
        fx, new = self.node.effects, self.new
        kept = set() if self.plan.force else set(self.old.ignition.files)
        fx.write_files(
            [f for f in new.ignition.files if f not in kept or fx.drifted(f)],
            skip_certificate_write=self.skip_certificate_write,
            on_written=lambda n: failpoints.reach(f"files:{n}"),
        )
        names = set(self.plan.units.added) | set(self.plan.units.changed)
        fx.write_units([u for u in new.ignition.units if self.plan.force or u.name in names])
        failpoints.reach("files:units")
        fx.delete_stale_data(self.old.ignition, new.ignition)

    def _passwd(self) -> None:
        fx = self.node.effects
        fx.update_ssh_keys(self.new.ignition.passwd.users)
        fx.set_password_hashes(self.old.ignition.passwd.users, self.new.ignition.passwd.users)

    def _os_work(self) -> bool:
        d = self.plan.diff
        if not (d.os_update or d.kargs or d.kernel_type or d.extensions):
            return False
        if not self.node.ostree and (refused := osstep.refusal(self.node, self.plan)):
            raise UpdateError(refused)  # a field this host cannot apply: never silently ignored
        return self.node.ostree or osstep.needed(self.node, self.plan)

    def _os(self) -> None:
        if not self.node.ostree:  # kernel arguments through the boot loader
            osstep.apply(self.node, self.plan, self._emit)
            return
        rpm = self.node.rpm
        assert rpm is not None
        self._emit(update_events.os_started(self.plan))
        imagemode.apply_os(rpm, self.node.root, self.plan)  # image mode, extensions
        staged = rpm.status().staged
        self.entry.staged = staged.checksum if staged else ""
        self._emit(update_events.os_finished(self.plan))

    def _emit(self, events: list[tuple[Reason, str]]) -> None:
        for reason, message in events:
            if self.record is not None:
                self.record(reason, message)

    def _actions(self) -> None:
        actions = executed_actions(self.plan.actions)
        if any(a.type is ActionType.REBOOT for a in actions):
            self.entry.reboot = True
            return  # the reboot happens in _finish, after the journal says so
        systemd = self.node.effects.systemd
        for action in actions:
            if self.offline_root and not systemd.live and action.type is not ActionType.NONE:
                self.skipped.append(str(action))
                log.warning(
                    "Skipped post config change action %s for config %s: no systemd runs "
                    "for this root (offline); it takes effect when the node boots from it",
                    action,
                    self.new.name,
                )
                continue
            log.info(
                "Performing post config change action: %s for config %s", action, self.new.name
            )
            service = action.service or ""
            try:
                if action.type is ActionType.RESTART:
                    systemd.restart(service)
                elif action.type is ActionType.RELOAD:
                    systemd.reload(service)
                elif action.type is ActionType.DAEMON_RELOAD:
                    systemd.daemon_reload()
            except SystemdError as e:
                failed = update_events.action_failed(action, str(e))
                self._emit([failed] if failed else [])
                if action.type is ActionType.RESTART:
                    what = f"restarting {service} service failed"
                else:
                    what = f"reloading {service or 'systemd'} configuration failed"
                raise SystemdError(f"could not apply update: {what}. Error: {e}") from e
            done = update_events.action_done(action)
            self._emit([done] if done else [])
            if action.type is ActionType.NONE:
                log.info("Node has Desired Config %s, skipping reboot", self.new.name)

    def _gate(self) -> None:
        """The health gate of a rebootless update (a reboot update's runs after the boot)."""
        assert self.gate is not None
        if self.entry.reboot:
            return
        ran = [a for a in executed_actions(self.plan.actions) if a.type is not ActionType.NONE]
        verdict = self.gate.run(self.new, settle=bool(ran) and not self.skipped)
        if not verdict.ok:
            raise UpdateError(verdict.reason(), Step.GATE)

    def _finish(self) -> Outcome:
        if self.entry.reboot and not self.skip_reboot:
            # from here until the boot id changes, the reboot is owed (mcd.agent.safety.owed)
            owed.owe(self.node.root, self.new.name, self.node.boot_id())
        if self.entry.reboot and (self.entry.staged or self._gated_after_boot()):
            # the journal (backups, both configs) outlives the reboot: the boot's health
            # gate promotes currentconfig, or rolls back from it (mcd.agent.update.postboot)
            self.entry.phase = Phase.AWAITING_REBOOT
            self.journal.save(self.entry)
            failpoints.reach("awaiting-reboot")
            return self._reboot()
        self._commit()
        if self.entry.reboot:
            return self._reboot(committed=True)
        return Outcome.DONE

    def _gated_after_boot(self) -> bool:
        """A reboot update without an OS change is gated after its boot too (a real reboot)."""
        gate = self.gate
        return not self.skip_reboot and gate is not None and gate.settings.enabled

    def _commit(self) -> None:
        imagemode.store_current(self.node.root, self.new_doc)  # currentconfig, currentimage
        failpoints.reach("commit")
        self.journal.clear(keep_undo=self.entry.reboot and not self.skip_reboot)
        seal_state(self.node.root)  # orig/ and noorig/ may have been created by this update
        log.info("Update to %s complete; currentconfig promoted", self.new.name)

    def _reboot(self, committed: bool = False) -> Outcome:
        if self.skip_reboot:
            log.info("Reboot needed for %s, skipped on request", self.new.name)
            return Outcome.REBOOT_PENDING
        rationale = softreboot.rationale(self.plan)  # soft: the kernel and the boot id stay
        try:
            owed.count_request(self.node.root, self.new.name, self.node.boot_id())
        except owed.RebootNotHappening as e:
            raise UpdateError(str(e), "reboot-owed") from e
        if self.before_reboot is not None:
            self.before_reboot(rationale)
        failpoints.reach("reboot")
        try:
            softreboot.issue(self.node, self.plan, rationale)
        except SystemdError as e:
            # Roll back whether or not the config was committed: a node that cannot reboot
            # stays exactly on its old config (upstream leaves the new files in place).
            self.entry.phase = Phase.ROLLING_BACK
            if committed:  # the journal was cleared at the commit: the rollback needs it back
                self.journal.begin(self.entry, self.old_doc, self.new_doc)
            else:
                self.journal.save(self.entry)
            self.rollback()
            raise UpdateError(
                f"reboot command failed, something is seriously wrong: {e}", "reboot"
            ) from e
        if committed:  # the reboot is asked for: nothing is rolled back from here
            self.node.effects.discard_undo()
        log.info("initiating reboot: %s", rationale)
        return Outcome.REBOOTING

    # -- undo -------------------------------------------------------------------------------

    def rollback(self) -> None:
        """Undo every started step, newest first; the journal is cleared at the end."""
        undo = {
            Step.OS.value: lambda: osstep.undo(self.node, self.plan, self.entry.staged),
            Step.PASSWD.value: self._undo_passwd,
            Step.FILES.value: self._undo_files,
        }
        errors = []
        failpoints.reach("rollback:begin")
        for step in reversed(self.entry.started):
            if step in undo:
                try:
                    undo[step]()
                except Exception as e:  # the journal stays: the next run finishes the rollback
                    errors.append(f"error rolling back {step}: {failure_reason(e)}")
                failpoints.reach(f"rollback:{step}")
        if Step.GATE.value in self.entry.started and not self.entry.reboot and not errors:
            try:  # the actions ran on the new files: run them again on the old ones
                failpoints.reach("rollback:actions")
                rerun_actions(self.node.effects.systemd, self.plan.actions, self.offline_root)
            except Exception as e:
                errors.append(f"error rolling back actions: {failure_reason(e)}")
        if not errors:  # then exactly as before: OS files, backups, enablement links, dirs
            try:
                self.node.effects.restore_undo()
            except (HostError, OSError) as e:
                errors.append(f"error rolling back files: {failure_reason(e)}")
        if errors:
            raise UpdateError("; ".join(errors))
        # a rollback after the commit (the reboot could not be requested) un-promotes
        if imagemode.is_current(self.node.root, self.new_doc):
            imagemode.store_current(self.node.root, self.old_doc)
        owed.clear(self.node.root)  # back on the old config: no reboot is owed
        self.journal.clear()
        log.info("Rolled back to %s", self.old.name)

    def _undo_passwd(self) -> None:
        fx = self.node.effects
        fx.update_ssh_keys(self.old.ignition.passwd.users)
        fx.set_password_hashes(self.new.ignition.passwd.users, self.old.ignition.passwd.users)

    def _undo_files(self) -> None:
        fx, old = self.node.effects, self.old
        kept = set(self.new.ignition.files)
        touched = [f for f in old.ignition.files if f not in kept or fx.drifted(f)]
        fx.put_back_files(touched, skip_certificate_write=self.skip_certificate_write)
        names = set(self.plan.units.removed) | set(self.plan.units.changed)
        fx.write_units([u for u in old.ignition.units if u.name in names])
        fx.delete_stale_data(self.new.ignition, old.ignition)


def failure_reason(e: BaseException) -> str:
    """The words for a failed step: the host's own message, or the error's kind for a bug."""
    if isinstance(e, (HostError, SystemdError, OSError, UpdateError)):
        return str(e) or type(e).__name__
    text = " ".join(str(e).split())[:300]
    return f"unexpected {type(e).__name__}" + (f": {text}" if text else "")
