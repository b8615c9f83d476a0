"""``mcd join`` writes a root only where once-from and restore would (issue 40, 10): without
``--root`` on a host that shows no sign of being a node it refuses in once-from's line and
exit code, before anything is fetched or written."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcd.cli import cli, common
from tests.unit.test_own_root import REFUSAL


@pytest.fixture
def plain_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(common, "node_signs", lambda host="/": [])


@pytest.mark.usefixtures("plain_host")
def test_join_without_root_on_a_plain_host_refuses_before_fetching(tmp_path: Path) -> None:
    ca = tmp_path / "ca.crt"
    ca.write_text("not read")
    with socket.socket() as server:  # a "server" that would see any fetch as a connection
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.settimeout(0.5)
        url = f"https://127.0.0.1:{server.getsockname()[1]}/config/worker"
        argv = ["join", "--server", url, "--token", "t", "--ca", str(ca)]
        result = CliRunner().invoke(cli, argv, env={"NO_COLOR": "1"}, prog_name="mcd")
        with pytest.raises(TimeoutError):
            server.accept()  # nothing was fetched
    assert result.exit_code == 1, result.output
    assert result.stderr == REFUSAL + "\n"
    assert result.stdout == ""


@pytest.mark.usefixtures("plain_host")
def test_join_names_its_root_like_once_from() -> None:
    shown = CliRunner().invoke(cli, ["join", "--help"]).output
    once = CliRunner().invoke(cli, ["once-from", "--help"]).output
    assert "Without it: / on a node" in shown and "Without it: / on a node" in once


@pytest.mark.usefixtures("plain_host")
def test_join_with_a_missing_root_says_so(tmp_path: Path) -> None:
    ca = tmp_path / "ca.crt"
    ca.write_text("not read")
    argv = ["join", "--server", "https://127.0.0.1:1/config/worker", "--token", "t",
            "--ca", str(ca), "--root", str(tmp_path / "nope")]  # fmt: skip
    result = CliRunner().invoke(cli, argv, env={"NO_COLOR": "1"}, prog_name="mcd")
    assert (result.exit_code, result.stderr) == (
        1,
        f"error: {tmp_path}/nope: no such directory (--root)\n",
    )
