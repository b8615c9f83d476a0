"""``mcd recover``: the way out when mcd's own state cannot be used.

An update journal that is truncated, empty, of an unknown phase, or whose
config documents are corrupt, and a ``currentconfig`` that cannot be read, stop
every command that writes and put the agent in ``Degraded`` with a reason that
names the file and points here. This module:

* inspects (no flag): what the journal and ``currentconfig`` say, or why they
  cannot be read;
* ``--finish``: completes the interrupted update as the journal says (roll
  forward, finish a rollback, or wait for the reboot), exactly what the next
  ``once-from`` or agent start would do;
* ``--abandon``: sets the journal aside (``*.abandoned``, still 0600) without
  changing anything else; the node keeps what is on disk, which ``mcd validate``
  checks and ``mcd restore`` or the force file repair;
* ``--current CONFIG``: when ``currentconfig`` itself is unreadable, writes the
  given rendered config (through the gate) as the node's current config.

Every change holds the node's writer lock.
"""

from __future__ import annotations

import os

from mcd.agent.update.handles import Node, current_config_on_disk
from mcd.agent.update.journal import JOURNAL, NEW_DOC, OLD_DOC, Journal, StateError, journal_configs
from mcd.agent.update.resume import recover
from mcd.host.fs import fsops
from mcd.host.fs.sealing import ABANDONED, STATE_FILE_MODE
from mcd.host.lock import writer_lock
from mcd.host.rootfs import Root
from mcd.model import gate
from mcd.model.machineconfig import load_machine_config
from mcd.model.vocabulary import CURRENT_CONFIG_PATH


class RecoveryError(Exception):
    """The recovery step could not be done; the message says why."""


def inspect(root: Root) -> tuple[list[str], bool]:
    """Lines describing the node's state files, and whether they can all be used."""
    lines, ok = [], True
    try:
        loaded = Journal(root).load()
        if loaded is not None:
            journal_configs(loaded[1], loaded[2])
    except StateError as e:
        lines.append(f"journal: {e}")
        ok = False
    else:
        if loaded is None:
            lines.append("journal: no interrupted update")
        else:
            entry = loaded[0]
            lines.append(
                f"journal: interrupted update {entry.old} -> {entry.new}, phase {entry.phase}, "
                f"steps done: {', '.join(entry.done) or 'none'}, "
                f"started: {', '.join(entry.started) or 'none'}"
            )
            if entry.error:
                lines.append(f"journal: failed with: {entry.error}")
    try:
        current = current_config_on_disk(root)
    except StateError as e:
        lines.append(f"currentconfig: {e}")
        ok = False
    else:
        lines.append(f"currentconfig: {current[0].name if current else 'none'}")
    return lines, ok


def finish(node: Node) -> str:
    with writer_lock(node.root, "mcd recover --finish"):
        try:
            interrupted = Journal(node.root).load()
            if interrupted is not None:
                journal_configs(interrupted[1], interrupted[2])
        except StateError as e:
            raise RecoveryError(f"cannot finish: {e}") from e
        if interrupted is None:
            return "nothing to finish: no interrupted update"
        outcome = recover(node, skip_reboot=True)
        entry = interrupted[0]
        return f"finished the interrupted update {entry.old} -> {entry.new}: {outcome}"


def abandon(root: Root) -> str:
    with writer_lock(root, "mcd recover --abandon"):
        moved = []
        for path in (JOURNAL, OLD_DOC, NEW_DOC):  # the journal first: it is what recovery reads
            host = root.host_path(path)
            if os.path.lexists(host):
                os.replace(host, host + ABANDONED)
                moved.append(path + ABANDONED)
        if moved:
            fsops.fsync_dir(os.path.dirname(root.host_path(JOURNAL)))
        if not moved:
            return "nothing to abandon: no interrupted update"
        return (
            f"abandoned the interrupted update (kept as {', '.join(moved)}); the node keeps "
            "what is on disk: check it with `mcd validate`, repair it with `mcd restore` or "
            "the force file"
        )


def set_current(root: Root, data: bytes, source: str) -> str:
    mc = load_machine_config(data)
    gate.admit(mc)
    with writer_lock(root, "mcd recover --current"):
        try:
            found = current_config_on_disk(root)
        except StateError:
            found = None
        else:
            if found is not None:
                raise RecoveryError(
                    f"{CURRENT_CONFIG_PATH} is readable (config {found[0].name}); "
                    "refusing to replace it"
                )
        fsops.write_file(root, CURRENT_CONFIG_PATH, data, mode=STATE_FILE_MODE)
    return f"wrote {source} ({mc.name}) as {CURRENT_CONFIG_PATH}"
