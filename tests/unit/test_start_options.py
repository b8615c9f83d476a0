"""``mcd start`` outside a pod (issue 40, 9): the same ``--root`` as every other command
(``--root-mount`` a hidden alias that still works), and the drain controller drains by
default, as in the DaemonSet and upstream."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from mcd.agent.options import Options
from mcd.cli import agent as agent_cli
from mcd.cli import cli


class Started(Exception):
    """Raised by the stand-in agent: the options it was given are in ``args[0]``."""


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[Options]:
    seen: list[Options] = []

    def fake_agent(options: Options, *_: Any) -> None:
        seen.append(options)
        raise Started

    monkeypatch.setattr(agent_cli, "Agent", fake_agent)
    return seen


KUBECONFIG = """apiVersion: v1
kind: Config
current-context: c
clusters: [{name: c, cluster: {server: "http://127.0.0.1:1"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
users: [{name: u, user: {token: t}}]
"""


def start(tmp: Path, *args: str) -> Any:
    kubeconfig = tmp / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    argv = ["start", "--node-name", "n1", "--kubeconfig", str(kubeconfig), *args]
    return CliRunner().invoke(cli, argv, env={"NO_COLOR": "1"}, prog_name="mcd")


def test_root_and_drain_controller_by_default(tmp_path: Path, started: list[Options]) -> None:
    result = start(tmp_path, "--root", str(tmp_path))
    assert isinstance(result.exception, Started), result.output
    assert started[0].root_mount == str(tmp_path)
    assert started[0].drain_mode == "controller"
    assert Options(node_name="n1").drain_mode == "controller"


def test_root_mount_is_a_hidden_alias_that_still_works(
    tmp_path: Path, started: list[Options]
) -> None:
    result = start(tmp_path, "--root-mount", str(tmp_path), "--drain-mode", "self")
    assert isinstance(result.exception, Started), result.output
    assert (started[0].root_mount, started[0].drain_mode) == (str(tmp_path), "self")
    for command in ("start", "firstboot-complete-machineconfig"):
        shown = CliRunner().invoke(cli, [command, "--help"]).output
        assert "  --root DIRECTORY" in shown and "  --root-mount" not in shown  # no option line


def test_both_names_with_different_roots_is_a_usage_error(
    tmp_path: Path, started: list[Options]
) -> None:
    result = start(tmp_path, "--root", str(tmp_path), "--root-mount", str(tmp_path / "x"))
    assert result.exit_code == 64
    assert "give --root (--root-mount is its old name), not both" in result.output
    assert not started


def test_a_missing_root_is_one_line_naming_root(tmp_path: Path, started: list[Options]) -> None:
    result = start(tmp_path, "--root", str(tmp_path / "nope"))
    assert result.exit_code == 1
    assert result.stderr == f"error: {tmp_path}/nope: no such directory (--root)\n"
    assert not started
