"""``mcd restore``: put drifted managed files back, exactly as the current config says.

Today users decode base64 out of YAML by hand to repair a drifted file. This
rewrites each drifted file, unit or dropin of the node's current config
(``/etc/machine-config-daemon/currentconfig``, or a config given explicitly)
with its exact bytes, mode and owner, through the same atomic writes as an
update. It says what it restored and why, never the contents. A running
agent's drift monitor sees the restore and brings the node back to Done.
"""

from __future__ import annotations

import logging
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass

from mcd.agent.update.handles import OSTREE_BOOTED, Node, current_config_on_disk
from mcd.agent.update.journal import Journal, StateError
from mcd.host.errors import HostError
from mcd.host.fs.sealing import seal_state
from mcd.host.lock import LockBusy, writer_lock
from mcd.host.ondisk.validation import DriftKind, validate_on_disk
from mcd.model import gate
from mcd.model.gate import GateError
from mcd.model.machineconfig import MachineConfig
from mcd.model.vocabulary import CURRENT_CONFIG_PATH, dropin_path, unit_path

log = logging.getLogger(__name__)


class RestoreError(Exception):
    """Nothing was restored; the message says why."""


@dataclass(frozen=True)
class Restored:
    path: str
    problem: str


def config_of(node: Node, explicit: MachineConfig | None) -> MachineConfig:
    if explicit is not None:
        return explicit
    try:
        found = current_config_on_disk(node.root)
    except StateError as e:
        raise RestoreError(str(e)) from e
    if found is None:
        raise RestoreError(
            f"no current config: {CURRENT_CONFIG_PATH} does not exist; give --config"
        )
    return found[0]


def restore(
    node: Node, paths: Sequence[str] = (), config: MachineConfig | None = None
) -> tuple[MachineConfig, list[Restored], list[str]]:
    """Rewrite drifted paths (all, or those named). Returns the config, what was restored,
    and the named paths that already matched. Holds the node's writer lock throughout."""
    try:
        with writer_lock(node.root, "mcd restore"):
            return _restore(node, paths, config)
    except LockBusy as e:
        raise RestoreError(str(e)) from e


def _restore(
    node: Node, paths: Sequence[str], config: MachineConfig | None
) -> tuple[MachineConfig, list[Restored], list[str]]:
    seal_state(node.root)
    if Journal(node.root).pending():
        raise RestoreError(
            "an update is in progress (/etc/machine-config-daemon/transaction.json); "
            "let it finish before restoring files"
        )
    mc = config_of(node, config)
    try:  # the same gate as every update: restore writes what the config says
        gate.admit(mc)
        node.effects.check_targets(mc.ignition, ostree=node.root.exists(OSTREE_BOOTED))
    except (GateError, HostError) as e:
        raise RestoreError(str(e)) from e
    files = {f.path: f for f in mc.ignition.files}
    units = {unit_path(u.name): u for u in mc.ignition.units}
    for u in mc.ignition.units:
        units.update({dropin_path(u.name, d.name): u for d in u.dropins})
    wanted = [posixpath.normpath(p) for p in paths]
    unknown = [p for p in wanted if p not in files and p not in units]
    if unknown:
        raise RestoreError(f"not managed by {mc.name}: {', '.join(unknown)}")
    report = validate_on_disk(mc, node.root, node.effects.systemd)
    drifted = {m.path: m for m in report.mismatches}
    selected = [p for p in (wanted or list(drifted)) if p in drifted]
    restored: list[Restored] = []
    try:
        for path in selected:
            mismatch = drifted[path]
            if mismatch.kind is DriftKind.FILE and path in files:
                node.effects.write_files([files[path]])
            else:
                node.effects.write_units([units[path]])
            restored.append(Restored(path, mismatch.message))
            log.info("Restored %s from %s", path, mc.name)
    except HostError as e:
        raise RestoreError(f"restoring {path}: {e}") from e
    clean = [p for p in wanted if p not in drifted]
    return mc, restored, clean
