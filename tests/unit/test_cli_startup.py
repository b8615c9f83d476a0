"""Start-up: the offline commands load neither the cluster client nor the agent.

Timing lives in ``bench/startup.py`` (ratios to ``python -c "import click, yaml"``); these
tests pin what makes it fast: which modules a fresh interpreter has loaded after each command.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from mcd.cli import COMMANDS, cli

ROOT = Path(__file__).resolve().parents[2]
EX1 = str(ROOT / "examples/rendered-worker-1.yaml")
EX2 = str(ROOT / "examples/rendered-worker-2.yaml")

PROBE = """
import json, sys
from mcd.cli import cli
try:
    cli(sys.argv[1:], prog_name="mcd")
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def loaded_after(*args: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, text=True, check=False
    )
    return set(json.loads(done.stderr.strip().splitlines()[-1]))


@pytest.mark.parametrize(
    "args",
    [
        ("--help",),
        ("plan", EX1, EX2),
        ("diff", EX1, EX2),
        ("validate", EX1, "--root", "/nonexistent-mcd-root"),
        ("plan", "--help"),
    ],
    ids=["help", "plan", "diff", "validate", "plan-help"],
)
def test_offline_commands_import_no_cluster_or_agent_code(args: tuple[str, ...]) -> None:
    modules = loaded_after(*args)
    heavy = sorted(
        m
        for m in modules
        if m.split(".")[0]
        in ("kubernetes", "urllib3", "pydantic", "dbus_fast", "prometheus_client")
        or m.startswith(("mcd.cluster", "mcd.agent"))
    )
    assert heavy == []


def test_help_lists_every_command_with_its_whole_line() -> None:
    out = CliRunner().invoke(cli, ["--help"], terminal_width=200).stdout
    for name, (_, _, short) in COMMANDS.items():
        assert f"  {name} " in out or f"  {name}\n" in out
        assert short in out
        assert short.endswith(".") and "..." not in short


def test_every_listed_command_loads_and_has_help() -> None:
    for name in COMMANDS:
        result = CliRunner().invoke(cli, [name, "--help"])
        assert result.exit_code == 0, name
        assert "Usage: " in result.stdout and name in result.stdout


def test_every_option_of_every_command_says_what_it_does() -> None:
    ctx = click.Context(cli)
    for name in COMMANDS:
        command = cli.get_command(ctx, name)
        assert command is not None and command.help, name
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden:
                assert param.help, (name, param.opts)


def test_help_loads_no_model_or_yaml() -> None:
    modules = loaded_after("--help")
    assert sorted(m for m in modules if m.startswith(("mcd.", "yaml"))) == [
        "mcd.cli",
        "mcd.cli.exits",
    ]
