"""``mcd start --log-format``: text or one JSON object a line on stderr; library retry noise
folded away unless debugging; one-shot commands' plain lines."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcd.host.systemd import journal
from mcd.host.systemd.journal import NOISY_LIBRARIES, configure_console, configure_logging


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in journal._installed:
        root.removeHandler(handler)
    journal._installed.clear()
    root.handlers[:] = handlers
    root.setLevel(level)
    for name in NOISY_LIBRARIES:
        logging.getLogger(name).setLevel(logging.NOTSET)


def test_json_lines_carry_level_logger_message_and_fields(tmp_path: Path) -> None:
    stream = io.StringIO()
    where = configure_logging(
        fields={"MCD_NODE": "worker-0"},
        socket_path=str(tmp_path / "no-journal"),
        stream=stream,
        log_format="json",
    )
    assert where == "stderr"
    logging.getLogger("mcd.test").warning("Writing file %s", '"/etc/foo"')
    logging.getLogger("urllib3.connectionpool").warning("Retrying (Retry(total=2)) after ...")
    lines = stream.getvalue().splitlines()
    assert len(lines) == 1  # urllib3's retry warning is folded away
    record = json.loads(lines[0])
    assert record["level"] == "warning" and record["logger"] == "mcd.test"
    assert record["message"] == 'Writing file "/etc/foo"' and record["mcd_node"] == "worker-0"
    assert record["time"].endswith("Z")


def test_debug_shows_library_lines_and_text_has_timestamps(tmp_path: Path) -> None:
    stream = io.StringIO()
    configure_logging(logging.DEBUG, socket_path=str(tmp_path / "x"), stream=stream)
    logging.getLogger("urllib3.connectionpool").warning("Retrying (Retry(total=2))")
    line = stream.getvalue().splitlines()[0]
    assert line[:4].isdigit() and "WARNING urllib3.connectionpool: Retrying" in line


def test_console_lines_are_plain_and_errors_left_to_the_command(tmp_path: Path) -> None:
    stream = io.StringIO()
    configure_console(logging.INFO, socket_path=str(tmp_path / "x"), stream=stream)
    log = logging.getLogger("mcd.test")
    log.info("Writing file %s", '"/etc/foo"')
    log.warning("Skipped something")
    log.error("Update failed")  # the command prints its own error line
    assert stream.getvalue() == 'Writing file "/etc/foo"\nwarning: Skipped something\n'
