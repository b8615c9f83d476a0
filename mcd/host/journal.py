"""Logging to journald (with structured fields) or stderr, and ``sd_notify``.

When the journal socket exists the agent logs through ``systemd-python``'s
``JournalHandler`` with ``SYSLOG_IDENTIFIER=machine-config-daemon`` and
fields such as ``MCD_NODE`` and ``MCD_CONFIG``; otherwise (in a pod) to
stderr. The message text is the same either way. Only upper-case fields reach
the journal: the handler would otherwise forward every ``LogRecord`` attribute.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from typing import Any, TextIO

from systemd import daemon, journal

JOURNAL_SOCKET = "/run/systemd/journal/socket"
SYSLOG_IDENTIFIER = "machine-config-daemon"
STDERR_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

_installed: list[logging.Handler] = []


def _send_fields(text: str, /, **fields: Any) -> None:
    """Forward only journal-style (upper-case) fields; ``message``, ``args`` etc. stay out."""
    journal.send(text, **{k: v for k, v in fields.items() if k.isupper() and v is not None})


class _StaticFields(logging.Filter):
    """Adds fields such as ``MCD_NODE`` to every record (``extra=`` may add more)."""

    def __init__(self, fields: Mapping[str, str]) -> None:
        super().__init__()
        self._fields = dict(fields)

    def filter(self, record: logging.LogRecord) -> bool:
        for key, value in self._fields.items():
            if not hasattr(record, key):
                setattr(record, key, value)
        return True


def _handler(socket_path: str, stream: TextIO | None) -> tuple[logging.Handler, str]:
    if os.path.exists(socket_path):
        handler: logging.Handler = journal.JournalHandler(
            sender_function=_send_fields, SYSLOG_IDENTIFIER=SYSLOG_IDENTIFIER
        )
        handler.setFormatter(logging.Formatter("%(message)s"))
        return handler, "journal"
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(logging.Formatter(STDERR_FORMAT))
    return handler, "stderr"


def configure_logging(
    level: int = logging.INFO,
    fields: Mapping[str, str] | None = None,
    socket_path: str = JOURNAL_SOCKET,
    stream: TextIO | None = None,
) -> str:
    """Install the agent's log handler on the root logger; returns ``journal`` or ``stderr``."""
    root = logging.getLogger()
    for handler in _installed:
        root.removeHandler(handler)
    _installed.clear()
    handler, where = _handler(socket_path, stream)
    handler.addFilter(_StaticFields(fields or {}))
    root.addHandler(handler)
    root.setLevel(level)
    _installed.append(handler)
    return where


def notify(status: str = "", ready: bool = False, stopping: bool = False) -> bool:
    """``sd_notify`` READY/STOPPING/STATUS; False (and no error) when not run by systemd."""
    if not os.environ.get("NOTIFY_SOCKET"):
        return False
    lines = []
    if ready:
        lines.append("READY=1")
    if stopping:
        lines.append("STOPPING=1")
    if status:
        lines.append(f"STATUS={status}")
    try:
        return bool(daemon.notify("\n".join(lines)))
    except OSError as e:
        logging.getLogger(__name__).debug("sd_notify failed: %s", e)
        return False
