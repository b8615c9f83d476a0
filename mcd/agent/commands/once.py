"""``mcd once-from``: apply one config on a host with no cluster (upstream ``--once-from``).

The source is a MachineConfig or a bare Ignition config, from a path or an
http(s) URL. The node's previous config is its on-disk ``currentconfig`` (or
the empty config); the legacy action table decides between a reboot and
nothing, as upstream does for once-from. An update a previous run left
half-done is finished (or rolled back) first, and reported as that.

The config is read and parsed before anything else; then the node's writer
lock (:mod:`mcd.host.lock`) is held for the rest, so two writers never
interleave.
"""

from __future__ import annotations

import logging
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from mcd.agent.safety import trymode
from mcd.agent.safety.health import once_gate
from mcd.agent.update.handles import Node, current_config_on_disk, document_of
from mcd.agent.update.journal import Journal
from mcd.agent.update.resume import recover
from mcd.agent.update.transaction import Outcome, Transaction, UpdateError
from mcd.host.effects import HostEffects
from mcd.host.fs import fsops
from mcd.host.fs.sealing import seal_state
from mcd.host.lock import writer_lock
from mcd.host.ondisk.validation import validate_on_disk
from mcd.host.osupdate.rpmostree import RpmOstree
from mcd.host.rootfs import Root
from mcd.host.runner import Runner
from mcd.host.systemd.connect import connect as connect_systemd
from mcd.host.systemd.manager import SystemdManager
from mcd.model.disruption.policy import ActionType
from mcd.model.errors import ConfigError
from mcd.model.machineconfig import MachineConfig, empty_machine_config, load_machine_config
from mcd.model.planning.plan import UpdatePlan, make_plan
from mcd.model.text import printable
from mcd.model.vocabulary import FORCE_FILE

log = logging.getLogger(__name__)

MAX_SOURCE = 64 << 20


def read_source(source: str, timeout: float = 30.0) -> bytes:
    """The config's bytes from a path or an http(s) URL (64 MiB at most)."""
    if source.startswith(("http://", "https://")):
        with urllib.request.urlopen(source, timeout=timeout) as response:  # http(s) only
            data: bytes = response.read(MAX_SOURCE + 1)
    else:
        with open(source, "rb") as f:
            data = f.read(MAX_SOURCE + 1)
    if len(data) > MAX_SOURCE:
        raise ConfigError(f"{source}: larger than {MAX_SOURCE >> 20} MiB")
    return data


def node_for(
    root: Root, systemd: SystemdManager | None = None, runner: Runner | None = None
) -> Node:
    runner = runner or Runner()
    systemd = systemd or connect_systemd(root, runner)
    return Node(root, HostEffects(root, systemd, runner), RpmOstree(root))


@dataclass(frozen=True)
class OnceResult:
    """What ``once-from`` did: its own outcome, and an interrupted update it finished first."""

    outcome: Outcome
    config: str
    """The name of the config ``once-from`` was given."""
    current: str
    """The name in ``currentconfig`` afterwards ('' when there is none)."""
    recovered: Outcome | None = None
    recovered_update: str = ""
    """``old -> new`` of the interrupted update finished first, when there was one."""

    @property
    def applied(self) -> bool:
        return self.outcome is Outcome.DONE and self.current == self.config

    def describe(self, root: str) -> list[str]:
        """What happened, in words that never call a config applied unless it is current."""
        lines = []
        if self.recovered is not None:
            what = printable(self.recovered_update)
            lines.append(f"finished an interrupted update {what}: {self.recovered}")
        outcome, name = self.outcome, printable(self.config)
        if self.applied:
            lines.append(f"{outcome}: {name} applied to {root}")
        elif self.recovered is not None and outcome is self.recovered:
            lines.append(f"not applied: {name}: reboot first, then run once-from again")
        elif outcome is Outcome.DONE:
            current = printable(self.current) or "none"
            lines.append(f"not applied: {name}: the current config is {current}")
        elif self.current == self.config:
            lines.append(f"{outcome}: {name} applied to {root}; a reboot completes it")
        else:
            lines.append(f"{outcome}: {name} staged in {root}; current after the reboot")
        return lines


def once_from(source: str, node: Node, skip_reboot: bool = False) -> Outcome:
    return run_once(source, node, skip_reboot=skip_reboot).outcome


def run_once(
    source: str, node: Node, skip_reboot: bool = False, try_seconds: float | None = None
) -> OnceResult:
    data = read_source(source)
    new = load_machine_config(data, default_name=Path(source).stem or "once-from")
    with writer_lock(node.root, f"mcd once-from {source}"):
        reverted = revert_due(node)
        if reverted is not None:
            log.warning("%s", reverted)
        pending = trymode.load(node.root)
        if pending is not None:
            raise UpdateError(
                f"{pending.describe()}: `mcd confirm` or `mcd try-revert --now` first"
            )
        return _apply_once(node, new, data, skip_reboot, try_seconds)


def revert_due(node: Node, now: bool = False) -> str | None:
    """Revert a try whose deadline passed (or any, with ``now``); what happened, or None.
    The caller holds the writer lock."""
    state = trymode.load(node.root)
    if state is None or not (now or state.expired()):
        return None
    previous = trymode.previous_document(node.root)
    mc = load_machine_config(previous)
    result = _apply_once(node, mc, previous, skip_reboot=True)
    trymode.clear(node.root, timer=state.timer)  # --now too: the timer would keep its name
    why = "not confirmed in time" if not now else "on request"
    return f"reverted the try of {state.config} to {state.previous} ({why}): {result.outcome}"


def _apply_once(
    node: Node, new: MachineConfig, data: bytes, skip_reboot: bool, try_seconds: float | None = None
) -> OnceResult:
    root = node.root
    seal_state(root)
    force = root.exists(FORCE_FILE)
    interrupted = Journal(root).load()
    recovered = recover(node, skip_reboot=skip_reboot, force=force)
    what = f"{interrupted[0].old} -> {interrupted[0].new}" if interrupted else ""

    def result(outcome: Outcome) -> OnceResult:
        found = current_config_on_disk(root)
        current = found[0].name if found else ""
        return OnceResult(outcome, new.name, current, recovered, what)

    if recovered in (Outcome.REBOOTING, Outcome.REBOOT_PENDING):
        return result(recovered)  # the interrupted update needs its reboot first
    current = current_config_on_disk(root)
    old, old_doc = current if current else (empty_machine_config(), None)
    plan = make_plan(
        old, new, force=force, legacy=True, node_fips=node.fips_for(new), host=node.support()
    )
    if force:
        fsops.remove(root, FORCE_FILE)  # consumed once the actions are computed
        log.info("Force file %s consumed", FORCE_FILE)
    if old.name == new.name and plan.diff.is_empty() and not force:
        report = validate_on_disk(new, root, node.effects.systemd)
        if not report.ok:  # the node drifted: say exactly how; the force file repairs it
            raise UpdateError(report.reasons()[0])
        log.info("Node is already on config %s", new.name)
        return result(Outcome.DONE)
    txn = Transaction(
        node,
        plan,
        document_of(old, old_doc),
        data,
        skip_reboot=skip_reboot,
        offline_root=not node.effects.systemd.live,
        gate=once_gate(root, node.effects.systemd),
    )
    if try_seconds is None:
        return result(txn.run())
    _check_tryable(plan, skip_reboot)
    state = trymode.begin(root, new.name, old.name, document_of(old, old_doc), try_seconds)
    try:
        outcome = txn.run()
    except BaseException:
        trymode.clear(root)  # rolled back: nothing to try, nothing to revert
        raise
    trymode.schedule(root, state, node.effects.systemd.live)
    return result(outcome)


def _check_tryable(plan: UpdatePlan, skip_reboot: bool) -> None:
    d = plan.diff
    if d.os_update or d.kargs or d.kernel_type or d.extensions:
        raise UpdateError("--try covers files, units and users; this change updates the OS")
    if any(a.type is ActionType.REBOOT for a in plan.actions) and not skip_reboot:
        raise UpdateError("--try: this change needs a reboot; add --skip-reboot to try it")
