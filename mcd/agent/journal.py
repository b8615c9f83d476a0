"""The update transaction's write-ahead journal under ``/etc/machine-config-daemon/``.

Before the first change the journal records both configs (whole documents, so
recovery needs no API server) and the phase; each step is recorded when it
starts and when it is done. Every write is atomic. An agent killed at any
instant finds the journal at its next start and finishes or rolls back.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from enum import StrEnum

from mcd.host import fsops
from mcd.host.rootfs import Root

JOURNAL = "/etc/machine-config-daemon/transaction.json"
OLD_DOC = "/etc/machine-config-daemon/transaction-old.json"
NEW_DOC = "/etc/machine-config-daemon/transaction-new.json"


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
        try:
            raw = json.loads(self.root.read_bytes(JOURNAL))
            old_doc, new_doc = self.root.read_bytes(OLD_DOC), self.root.read_bytes(NEW_DOC)
        except FileNotFoundError:
            return None
        raw["phase"] = Phase(raw["phase"])
        return Entry(**raw), old_doc, new_doc

    def begin(self, entry: Entry, old_doc: bytes, new_doc: bytes) -> None:
        fsops.write_file(self.root, OLD_DOC, old_doc)
        fsops.write_file(self.root, NEW_DOC, new_doc)
        self.save(entry)

    def save(self, entry: Entry) -> None:
        data = json.dumps(asdict(entry), indent=1).encode()
        fsops.write_file(self.root, JOURNAL, data)

    def clear(self) -> None:
        fsops.remove(self.root, JOURNAL)  # the journal goes first: it is what recovery reads
        fsops.remove(self.root, OLD_DOC)
        fsops.remove(self.root, NEW_DOC)
