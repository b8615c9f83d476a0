"""Who logged in on the node: systemd-logind's session-start messages in the host journal.

The historical upstream login monitor, back: upstream followed
``journalctl -b -f -o cat -u systemd-logind.service MESSAGE_ID=8d45620c...`` (removed in
2023, commit ``d72f74ba2``) and annotated the Node ``machineconfiguration.openshift.io/ssh=
accessed``. Administrators' runbooks still read that annotation: it says someone logged in
and may have edited files by hand. Here the journal is read with systemd-python's
``journal.Reader`` (no ``journalctl`` child): first this boot's sessions that started
before the agent (an early login), then each new one as journald appends it.

Only sessions logind itself announced count: the match is the catalog id *and* a trusted
field journald sets from the sender (``_SYSTEMD_UNIT=systemd-logind.service``, or the
sender's ``_COMM``), so a pod logging a look-alike message cannot fake a login.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcd.host.rootfs import Root
from systemd import journal

log = logging.getLogger(__name__)

SESSION_START = "8d45620c1a4348dbb17410da57c60c66"  # SD_MESSAGE_SESSION_START (sd-messages.h)
LOGIND_UNIT = "systemd-logind.service"
LOGIND_COMM = "systemd-logind"
JOURNAL_DIRS = ("/var/log/journal", "/run/log/journal")


@dataclass(frozen=True)
class Login:
    """One session start: logind's message ("New session 3 of user core.") and its ids."""

    message: str
    session: str = ""
    user: str = ""


def journal_directory(root: Root) -> str | None:
    """The host journal under ``root`` (persistent first), or None when there is none."""
    for node_path in JOURNAL_DIRS:
        host = root.host(node_path)
        try:
            if any(os.scandir(host)):
                return host
        except OSError:
            continue
    return None


def open_reader(directory: str | None) -> Any:
    """A reader of this boot's logind session starts (``directory`` None: the local
    journal, for an agent running on the host itself)."""
    reader = journal.Reader(path=directory) if directory else journal.Reader()
    reader.this_boot()
    reader.add_match(MESSAGE_ID=SESSION_START, _SYSTEMD_UNIT=LOGIND_UNIT)
    reader.add_disjunction()
    reader.add_match(MESSAGE_ID=SESSION_START, _COMM=LOGIND_COMM)
    return reader


def _login(entry: dict[str, Any]) -> Login:
    return Login(
        str(entry.get("MESSAGE", "")),
        str(entry.get("SESSION_ID", "")),
        str(entry.get("USER_ID", "")),
    )


class LoginMonitor:
    """Calls ``on_login`` for every session start of this boot, early ones first."""

    def __init__(
        self,
        on_login: Callable[[Login], None],
        directory: str | None,
        poll: float = 1.0,
    ) -> None:
        self._on_login = on_login
        self._directory = directory
        self._poll = poll

    @classmethod
    def for_root(
        cls, root: Root, on_login: Callable[[Login], None], poll: float = 1.0
    ) -> LoginMonitor | None:
        """The monitor of the node mounted at ``root``; None when it keeps no journal."""
        if root.path == "/":
            return cls(on_login, None, poll)
        directory = journal_directory(root)
        if directory is None:
            log.info("No journal under %s: the login monitor is off", root.path)
            return None
        return cls(on_login, directory, poll)

    def run(self, stop: threading.Event) -> None:
        reader = open_reader(self._directory)
        try:
            early = 0
            for entry in reader:  # sessions that started before the agent, this boot
                early += 1
                self._on_login(_login(entry))
            if early:
                log.info("Detected %d login session(s) before the daemon started", early)
            while not stop.is_set():
                if reader.wait(self._poll) == journal.NOP:
                    continue
                for entry in reader:
                    self._on_login(_login(entry))
        finally:
            reader.close()
