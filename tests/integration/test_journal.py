"""journald logging with structured fields, the stderr fallback, and sd_notify."""

from __future__ import annotations

import io
import json
import logging
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcd.cli import cli
from mcd.host.systemd import journal

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    journal._installed.clear()


def test_journal_gets_the_message_and_structured_fields() -> None:
    """A private mount namespace with its own /run: the machine's journal is never touched."""
    script = (
        "mount --make-rprivate / && mount -t tmpfs tmpfs /run && "
        f"exec {sys.executable} -m tests.integration.helpers.journal_capture"
    )
    try:
        proc = subprocess.run(
            ["unshare", "-m", "sh", "-c", script],
            check=False, capture_output=True, text=True, timeout=60, cwd=REPO,
            env=dict(os.environ, PYTHONPATH=str(REPO)),
        )  # fmt: skip
    except FileNotFoundError:
        pytest.skip("unshare is not installed")
    if proc.returncode != 0 and "Operation not permitted" in proc.stderr:
        pytest.skip("no permission for a private mount namespace")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["where"] == "journal"
    fields = out["fields"]
    assert fields["MESSAGE"] == 'Writing file "/etc/foo"'
    assert fields["SYSLOG_IDENTIFIER"] == "machine-config-daemon"
    assert fields["PRIORITY"] == "6"
    assert fields["MCD_NODE"] == "worker-0"
    assert fields["MCD_CONFIG"] == "rendered-worker-2"
    assert all(key.isupper() for key in fields), "lower-case LogRecord attributes leaked"


def test_stderr_fallback_has_the_same_text(tmp_path: Path, restore_logging: None) -> None:
    stream = io.StringIO()
    where = journal.configure_logging(socket_path=str(tmp_path / "no-journal"), stream=stream)
    logging.getLogger("mcd.test").info("Writing file %s", '"/etc/foo"')
    assert where == "stderr"
    assert stream.getvalue().rstrip().endswith('mcd.test: Writing file "/etc/foo"')


def test_sd_notify_ready_and_status(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "notify"
    sink = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sink.bind(str(path))
    sink.settimeout(5)
    monkeypatch.setenv("NOTIFY_SOCKET", str(path))
    try:
        assert journal.notify("Done: rendered-worker-2", ready=True)
        assert sink.recv(4096) == b"READY=1\nSTATUS=Done: rendered-worker-2"
    finally:
        sink.close()


def test_sd_notify_is_a_no_op_outside_systemd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert not journal.notify("x", ready=True)
    monkeypatch.setenv("NOTIFY_SOCKET", str(tmp_path / "gone"))
    assert not journal.notify("x", ready=True)  # a vanished socket is not an error


class _Seen(logging.Filter):
    def __init__(self) -> None:
        super().__init__()
        self.fields: list[tuple[str | None, str | None]] = []

    def filter(self, record: logging.LogRecord) -> bool:
        self.fields.append((getattr(record, "MCD_NODE", None), getattr(record, "MCD_CONFIG", None)))
        return True


def test_mcd_start_tags_every_entry_with_node_and_config(
    tmp_path: Path, restore_logging: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`mcd start` installs MCD_NODE itself; MCD_CONFIG follows the config being worked on."""
    real = journal._handler  # never the machine's own journal: stderr, same filters
    monkeypatch.setattr(journal, "_handler", lambda _s, *rest: real(str(tmp_path / "none"), *rest))
    result = CliRunner().invoke(
        cli, ["start", "--node-name", "worker-7", "--kubeconfig", str(tmp_path / "missing"),
              "--root-mount", str(tmp_path)],
    )  # fmt: skip
    assert result.exit_code == 1  # cannot start without a cluster; logging is set up first
    (handler,) = journal._installed
    seen = _Seen()
    handler.addFilter(seen)
    log = logging.getLogger("mcd.test")
    log.info("booting")
    journal.set_log_fields(MCD_CONFIG="rendered-worker-2")
    log.info("updating")
    journal.set_log_fields(MCD_CONFIG=None)
    log.info("idle")
    assert seen.fields == [
        ("worker-7", None),
        ("worker-7", "rendered-worker-2"),
        ("worker-7", None),
    ]
