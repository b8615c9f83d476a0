"""The update transaction's write-ahead journal under ``/etc/machine-config-daemon/``.

Before the first change the journal records both configs (whole documents, so
recovery needs no API server) and the phase; each step is recorded when it
starts and when it is done. Every write is atomic. An agent killed at any
instant finds the journal at its next start and finishes or rolls back.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from enum import StrEnum
from typing import Any

from mcd.agent.update import failpoints
from mcd.host.errors import HostError
from mcd.host.fs import fsops
from mcd.host.fs.sealing import STATE_DIR_MODE, STATE_FILE_MODE, seal_state
from mcd.host.ondisk import undo
from mcd.host.rootfs import Root
from mcd.model.errors import ConfigError
from mcd.model.machineconfig import MachineConfig, load_machine_config

STATE_DIR = "/etc/machine-config-daemon"
JOURNAL = "/etc/machine-config-daemon/transaction.json"
OLD_DOC = "/etc/machine-config-daemon/transaction-old.json"
NEW_DOC = "/etc/machine-config-daemon/transaction-new.json"


RECOVERY = (
    "see what it says with `mcd recover`; `mcd recover --finish` completes it, "
    "`mcd recover --abandon` sets it aside"
)


class StateError(Exception):
    """A state file of mcd cannot be read; the message names it and the way out."""


class JournalError(StateError):
    """The update journal cannot be read or makes no sense."""


class JournalWriteError(HostError):
    """The update journal cannot be written (a full or read-only state directory)."""


def _write_error(e: Exception) -> JournalWriteError:
    if isinstance(e, JournalWriteError):
        return e
    why = (e.strerror or str(e)) if isinstance(e, OSError) else str(e)
    return JournalWriteError(
        f"cannot write the update journal in {STATE_DIR}: {why}; nothing was changed"
    )


class Phase(StrEnum):
    APPLYING = "applying"
    ROLLING_BACK = "rolling-back"
    AWAITING_REBOOT = "awaiting-reboot"


@dataclass
class Entry:
    old: str
    new: str
    phase: Phase = Phase.APPLYING
    started: list[str] = field(default_factory=list)
    done: list[str] = field(default_factory=list)
    boot_id: str = ""
    staged: str = ""
    """Checksum of the deployment this update staged ('' when the OS is untouched)."""
    reboot: bool = False
    error: str = ""
    actions: list[list[str]] = field(default_factory=list)
    """The planned post-config actions as ``[type, service]``, replayed on recovery."""
    force: bool = False


class Journal:
    def __init__(self, root: Root) -> None:
        self.root = root

    def pending(self) -> bool:
        """An update was interrupted (cheap: one ``lstat``)."""
        return self.root.exists(JOURNAL)

    def load(self) -> tuple[Entry, bytes, bytes] | None:
        """The interrupted update, or None; :class:`JournalError` when it cannot be used."""
        try:
            data = self.root.read_bytes(JOURNAL)
        except FileNotFoundError:
            return None
        except (OSError, HostError) as e:
            raise JournalError(f"unreadable update journal {JOURNAL}: {_why(e)}; {RECOVERY}") from e
        entry = parse_entry(data)
        docs = []
        for path in (OLD_DOC, NEW_DOC):
            try:
                docs.append(self.root.read_bytes(path))
            except (OSError, HostError) as e:
                raise JournalError(
                    f"incomplete update journal: {path}: {_why(e)}; {RECOVERY}"
                ) from e
        return entry, docs[0], docs[1]

    def begin(
        self,
        entry: Entry,
        old_doc: bytes,
        new_doc: bytes,
        record_undo: Callable[[], None] | None = None,
    ) -> None:
        """Record an update before its first change (``record_undo`` first: what the paths
        it touches are now, :mod:`mcd.host.ondisk.undo`). A journal that cannot be written
        (``ENOSPC``, ``EROFS``) leaves nothing behind and says where: mcd's state directory,
        not the config (:class:`JournalWriteError`)."""
        try:
            undo.discard(self.root)  # a record a killed begin left: never trusted
            if record_undo is not None:
                record_undo()
            for path, doc in ((OLD_DOC, old_doc), (NEW_DOC, new_doc)):
                fsops.write_file(
                    self.root, path, doc, STATE_FILE_MODE, dir_mode=STATE_DIR_MODE, sync_dir=False
                )
                failpoints.reach(f"journal:{os.path.basename(path)}")
            # one fsync of their directory makes both documents durable before the journal
            # that names them exists (recovery reads the journal first)
            state_dir = self.root.resolve(os.path.dirname(OLD_DOC), follow_last=True)
            fsops.fsync_dir(self.root.host(state_dir))
            self.save(entry)
        except (OSError, JournalWriteError) as e:
            self.discard()
            raise _write_error(e) from e
        seal_state(self.root)

    def save(self, entry: Entry) -> None:
        data = json.dumps(asdict(entry), indent=1).encode()
        try:
            fsops.write_file(self.root, JOURNAL, data, STATE_FILE_MODE, dir_mode=STATE_DIR_MODE)
            failpoints.reach("journal:save")
        except OSError as e:
            raise _write_error(e) from e

    def discard(self) -> None:
        """Remove whatever a failed :meth:`begin` wrote (the journal last written, first)."""
        for path in (JOURNAL, OLD_DOC, NEW_DOC, undo.RECORD, undo.PREIMAGES):
            with contextlib.suppress(OSError, HostError):  # nothing more to be done
                fsops.remove(self.root, path)

    def clear(self, keep_undo: bool = False) -> None:
        """The update is over: the journal, both documents and (unless ``keep_undo``: a
        committed update whose reboot request may still fail) the undo record go."""
        fsops.remove(self.root, JOURNAL)  # the journal goes first (durably): recovery reads it
        # then both documents, with one fsync of their directory for the two (without the
        # journal, a document a crash brings back is never read, and the next begin
        # replaces it)
        removed = [fsops.remove(self.root, path, sync_dir=False) for path in (OLD_DOC, NEW_DOC)]
        if any(removed):
            state_dir = self.root.resolve(os.path.dirname(OLD_DOC), follow_last=True)
            fsops.fsync_dir(self.root.host(state_dir))
        if not keep_undo:
            undo.discard(self.root)


def parse_entry(data: bytes) -> Entry:
    """The journal's entry, checked field by field (never quoting the file)."""
    if not data.strip():
        raise JournalError(f"corrupt update journal {JOURNAL}: the file is empty; {RECOVERY}")
    try:
        raw = json.loads(data)
    except UnicodeDecodeError as e:
        raise JournalError(
            f"corrupt update journal {JOURNAL}: not UTF-8 at byte {e.start}; {RECOVERY}"
        ) from e
    except json.JSONDecodeError as e:
        raise JournalError(
            f"corrupt update journal {JOURNAL}: not valid JSON at line {e.lineno}, "
            f"column {e.colno}; {RECOVERY}"
        ) from e
    if not isinstance(raw, dict):
        raise JournalError(f"corrupt update journal {JOURNAL}: not a JSON object; {RECOVERY}")
    values: dict[str, Any] = {}
    for f in fields(Entry):
        if f.name not in raw:
            if f.name in ("old", "new", "phase"):
                raise JournalError(
                    f"corrupt update journal {JOURNAL}: field {f.name} is missing; {RECOVERY}"
                )
            continue
        values[f.name] = _checked(f.name, raw[f.name])
    return Entry(**values)


_TYPES: dict[str, type] = {
    "old": str, "new": str, "phase": str, "boot_id": str, "staged": str, "error": str,
    "reboot": bool, "force": bool, "started": list, "done": list, "actions": list,
}  # fmt: skip


def _checked(name: str, value: Any) -> Any:
    def bad(what: str) -> JournalError:
        return JournalError(f"corrupt update journal {JOURNAL}: field {name} {what}; {RECOVERY}")

    if not isinstance(value, _TYPES[name]):
        raise bad(f"is not a {_TYPES[name].__name__}")
    if name == "phase" and isinstance(value, str):
        try:
            return Phase(value)
        except ValueError:
            raise bad("is not a known phase") from None
    if not isinstance(value, list):
        return value
    if name in ("started", "done") and not all(isinstance(v, str) for v in value):
        raise bad("is not a list of step names")
    if name == "actions" and not all(
        isinstance(a, list) and len(a) == 2 and all(isinstance(x, str) for x in a) for a in value
    ):
        raise bad("is not a list of [type, service] pairs")
    return value


def _why(e: Exception) -> str:
    return (e.strerror or str(e)) if isinstance(e, OSError) else str(e)


def journal_configs(old_doc: bytes, new_doc: bytes) -> tuple[MachineConfig, MachineConfig]:
    """The two configs the journal holds; a corrupt one is a :class:`JournalError`."""
    found = []
    for path, data in ((OLD_DOC, old_doc), (NEW_DOC, new_doc)):
        try:
            found.append(load_machine_config(data))
        except ConfigError as e:
            raise JournalError(f"corrupt update journal: {path}: {e}; {RECOVERY}") from e
    return found[0], found[1]
