"""Logging to journald (with structured fields) or stderr, and ``sd_notify``.

When the journal socket exists the agent logs through ``systemd-python``'s
``JournalHandler`` with ``SYSLOG_IDENTIFIER=machine-config-daemon`` and
fields such as ``MCD_NODE`` and ``MCD_CONFIG``; otherwise (in a pod) to
stderr. The message text is the same either way. Only upper-case fields reach
the journal: the handler would otherwise forward every ``LogRecord`` attribute.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from collections.abc import Mapping
from typing import Any, TextIO

from mcd.model.text import printable
from systemd import daemon, journal

JOURNAL_SOCKET = "/run/systemd/journal/socket"
SYSLOG_IDENTIFIER = "machine-config-daemon"
STDERR_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
LOG_FORMATS = ("text", "json")
NOISY_LIBRARIES = ("urllib3", "kubernetes")
"""Their warnings repeat what mcd reports once per failure (urllib3 logs every retry of a
request to an unreachable server); shown only at debug level."""

_installed: list[logging.Handler] = []


def _send_fields(text: str, /, **fields: Any) -> None:
    """Forward only journal-style (upper-case) fields; ``message``, ``args`` etc. stay out."""
    journal.send(text, **{k: v for k, v in fields.items() if k.isupper() and v is not None})


class _StaticFields(logging.Filter):
    """Adds fields such as ``MCD_NODE`` to every record (``extra=`` may add more)."""

    def __init__(self, fields: Mapping[str, str]) -> None:
        super().__init__()
        self._fields = dict(fields)

    def update(self, fields: Mapping[str, str | None]) -> None:
        for key, value in fields.items():
            if value is None:
                self._fields.pop(key, None)
            else:
                self._fields[key] = value

    def filter(self, record: logging.LogRecord) -> bool:
        for key, value in self._fields.items():
            if not hasattr(record, key):
                setattr(record, key, value)
        return True


class OneLineFormatter(logging.Formatter):
    """A log line's message is one line of printable text: a name holding a newline or a
    terminal escape never forges a second line (the escapes of :func:`printable`); a
    traceback, appended after it, keeps its lines."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        record.message = printable(record.message)
        return super().formatMessage(record)


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time (RFC 3339, UTC), level, logger, message, and the
    journal-style upper-case fields (``MCD_NODE``...) as lower-case keys."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, object] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": printable(record.getMessage()),
        }
        for key, value in record.__dict__.items():
            if key.isupper() and value is not None:
                out[key.lower()] = value
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False)


class ConsoleFormatter(logging.Formatter):
    """For one-shot commands: the message alone; problems prefixed ``warning:``/``error:``."""

    def format(self, record: logging.LogRecord) -> str:
        text = printable(record.getMessage())
        if record.levelno >= logging.ERROR:
            return f"error: {text}"
        if record.levelno >= logging.WARNING:
            return f"warning: {text}"
        return text


def _handler(
    socket_path: str, stream: TextIO | None, log_format: str
) -> tuple[logging.Handler, str]:
    if os.path.exists(socket_path):
        handler: logging.Handler = journal.JournalHandler(
            sender_function=_send_fields, SYSLOG_IDENTIFIER=SYSLOG_IDENTIFIER
        )
        handler.setFormatter(OneLineFormatter("%(message)s"))
        return handler, "journal"
    handler = logging.StreamHandler(stream or sys.stderr)
    formatter = JsonFormatter() if log_format == "json" else OneLineFormatter(STDERR_FORMAT)
    handler.setFormatter(formatter)
    return handler, "stderr"


def _install(handlers: list[logging.Handler], level: int) -> None:
    root = logging.getLogger()
    for handler in _installed:
        root.removeHandler(handler)
    _installed.clear()
    for handler in handlers:
        root.addHandler(handler)
        _installed.append(handler)
    root.setLevel(level)
    for name in NOISY_LIBRARIES:
        logging.getLogger(name).setLevel(
            logging.NOTSET if level <= logging.DEBUG else logging.ERROR
        )


def configure_logging(
    level: int = logging.INFO,
    fields: Mapping[str, str] | None = None,
    socket_path: str = JOURNAL_SOCKET,
    stream: TextIO | None = None,
    log_format: str = "text",
) -> str:
    """Install the agent's log handler on the root logger; returns ``journal`` or ``stderr``.

    ``log_format`` (``text`` or ``json``) shapes the stderr lines; the journal keeps its
    structured fields either way.
    """
    handler, where = _handler(socket_path, stream, log_format)
    handler.addFilter(_StaticFields(fields or {}))
    _install([handler], level)
    return where


def configure_console(
    level: int = logging.WARNING,
    socket_path: str = JOURNAL_SOCKET,
    stream: TextIO | None = None,
    journal_level: int | None = logging.INFO,
    show_errors: bool = False,
) -> None:
    """Logging for one-shot commands: plain lines for people on stderr at ``level``
    (no timestamps, no logger names), and, where journald runs, the same records at
    ``journal_level`` to the journal, so what a command changed stays on record. Error
    records reach the console only with ``show_errors`` (``-v``): the command prints its
    own one-line error, and a failure should not read twice."""
    console = logging.StreamHandler(stream or sys.stderr)
    console.setFormatter(ConsoleFormatter())
    console.setLevel(level)
    handlers: list[logging.Handler] = [console]
    if journal_level is not None and os.path.exists(socket_path):
        to_journal, _ = _handler(socket_path, None, "text")
        to_journal.setLevel(journal_level)
        handlers.append(to_journal)
    if not show_errors:  # the command reports its failure itself, once
        console.addFilter(lambda record: record.levelno < logging.ERROR)
    _install(handlers, min(h.level for h in handlers))


def set_log_fields(**fields: str | None) -> None:
    """Change the fields every later record carries (``MCD_CONFIG`` follows the update);
    ``None`` removes one."""
    for handler in _installed:
        for f in handler.filters:
            if isinstance(f, _StaticFields):
                f.update(fields)


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
