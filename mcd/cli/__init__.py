"""The ``mcd`` command line (click). Errors become exit codes here and nowhere else."""

from __future__ import annotations

import click

from mcd import __version__
from mcd.cli import agent, configs, host, pools


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="mcd")
def cli() -> None:
    """mcd: keep a node's OS configuration equal to a rendered MachineConfig."""


for command in (
    pools.plan_command,
    configs.validate,
    configs.diff,
    host.once_from_command,
    host.pivot_command,
    host.firstboot_command,
    host.restore_command,
    agent.start_command,
    agent.status_command,
    pools.controller_command,
):
    cli.add_command(command)


def main() -> None:
    cli(prog_name="mcd")
