"""The ``mcd`` command line (click). Errors become exit codes here and nowhere else.

Commands load lazily: ``mcd --help`` and the commands on config files alone import neither
the cluster client nor the agent, so they start about as fast as Python, click and YAML.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from typing import Any

import click

from mcd import __version__
from mcd.cli.exits import EXIT_ERROR, EXIT_USAGE

COMMANDS: dict[str, tuple[str, str, str]] = {
    # name: (module, attribute, the one line `mcd --help` shows without importing it)
    "plan": (
        "mcd.cli.pools",
        "plan_command",
        "Show what moving a node from OLD to NEW changes, costs, and why.",
    ),
    "validate": (
        "mcd.cli.configs",
        "validate",
        "Check that a config's files, units, dropins and masks are on disk.",
    ),
    "diff": (
        "mcd.cli.configs",
        "diff",
        "Show the file-level diff between two configs (secrets never printed).",
    ),
    "once-from": (
        "mcd.cli.host",
        "once_from_command",
        "Apply a MachineConfig or Ignition config once, with no cluster.",
    ),
    "confirm": (
        "mcd.cli.trycmds",
        "confirm_command",
        "Keep the config on trial (once-from --try): no revert at its deadline.",
    ),
    "try-revert": (
        "mcd.cli.trycmds",
        "try_revert_command",
        "Revert a try (once-from --try) whose deadline passed, or --now.",
    ),
    "pivot": ("mcd.cli.host", "pivot_command", "Force an OS pivot to an image with rpm-ostree."),
    "firstboot-complete-machineconfig": (
        "mcd.cli.host",
        "firstboot_command",
        "Apply the config encapsulated at install time, then reboot.",
    ),
    "restore": (
        "mcd.cli.host",
        "restore_command",
        "Rewrite drifted managed files with their exact bytes, mode and owner.",
    ),
    "recover": (
        "mcd.cli.host",
        "recover_command",
        "Inspect mcd's state files; finish or abandon an interrupted update.",
    ),
    "start": (
        "mcd.cli.agent",
        "start_command",
        "Run the agent: keep this node on its desiredConfig until stopped.",
    ),
    "status": (
        "mcd.cli.agent",
        "status_command",
        "Show a node's configs, state, pending update and last Events.",
    ),
    "controller": (
        "mcd.cli.pools",
        "controller_command",
        "Render MachineConfigPools and roll them out to their nodes (one leader at a time).",
    ),
    "history": (
        "mcd.cli.rollouts",
        "history_command",
        "List a pool's revisions (its last rendered configs), like kubectl rollout history.",
    ),
    "rollback": (
        "mcd.cli.rollouts",
        "rollback_command",
        "Point a pool back at an earlier rendered config (rolled out at the pool's pace).",
    ),
    "prune": (
        "mcd.cli.rollouts",
        "prune_command",
        "List (or delete with --apply) the rendered configs nothing uses.",
    ),
    "server": (
        "mcd.cli.server",
        "server_command",
        "Serve each pool's rendered config to booting nodes as Ignition (/config/<pool>).",
    ),
    "join-token": (
        "mcd.cli.server",
        "join_token_group",
        "Issue one-use tokens a new node fetches its pool's config with.",
    ),
    "join": (
        "mcd.cli.server",
        "join_command",
        "Fetch this host's pool config from mcd server and apply it once (no Ignition).",
    ),
}


class LazyGroup(click.Group):
    """A group whose commands are imported on first use; help lists them from ``COMMANDS``."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*COMMANDS, *(n for n in super().list_commands(ctx) if n not in COMMANDS)]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in COMMANDS:
            module, attr, short = COMMANDS[cmd_name]
            command = getattr(importlib.import_module(module), attr)
            assert isinstance(command, click.Command)
            command.short_help = short
            return command
        return super().get_command(ctx, cmd_name)

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        """click's main, with usage errors on their own exit code (64, not click's 2:
        2 means "not reconcilable / not matching" for every mcd command)."""
        try:
            rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.UsageError as e:
            e.show()
            sys.exit(EXIT_USAGE)
        except click.ClickException as e:
            e.show()
            sys.exit(e.exit_code)
        except click.Abort:
            click.echo("Aborted!", err=True)
            sys.exit(EXIT_ERROR)
        if not standalone_mode:
            return rv
        sys.exit(rv if isinstance(rv, int) else 0)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, short) for name, (_, _, short) in COMMANDS.items()]
        rows += [
            (name, cmd.get_short_help_str(formatter.width))
            for name, cmd in self.commands.items()
            if name not in COMMANDS and not cmd.hidden
        ]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="mcd")
def cli() -> None:
    """mcd: keep a node's OS configuration equal to a rendered MachineConfig."""
    click.get_current_context().call_on_close(_settle)


def _settle() -> None:
    """An update's preimages are unlinked by a thread of their own (``undo.discard``): a
    command returns once they are gone (loaded only if the command updated a root)."""
    undo = sys.modules.get("mcd.host.ondisk.undo")
    if undo is not None:
        undo.settle()


def main() -> None:
    cli(prog_name="mcd")
