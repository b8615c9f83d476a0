"""``mcd confirm`` and ``mcd try-revert``: the end of a try (``mcd once-from --try``)."""

from __future__ import annotations

from pathlib import Path

import click

from mcd.agent.commands.once import node_for, revert_due
from mcd.agent.safety import trymode
from mcd.agent.update.journal import StateError
from mcd.agent.update.transaction import UpdateError
from mcd.cli.common import fail, output_options, say, writing_root
from mcd.host.errors import HostError
from mcd.host.lock import writer_lock
from mcd.host.rootfs import Root


@click.command("confirm")
@writing_root
@output_options
def confirm_command(root: Path) -> None:
    """Keep the config on trial (``once-from --try``): no revert at its deadline.

    A try whose deadline already passed is reverted instead (exit 1, as too late)."""
    node = node_for(Root(root))
    try:
        with writer_lock(node.root, "mcd confirm"):
            state = trymode.load(node.root)
            if state is None:
                say("nothing to confirm: no try is pending")
                return
            if state.expired():
                reverted = revert_due(node)
                fail(f"too late to confirm: {reverted}")
            trymode.clear(node.root, timer=state.timer)
            say(f"confirmed: {state.config} stays")
    except (UpdateError, HostError, StateError, trymode.TryError) as e:
        fail(str(e))
    finally:
        node.effects.systemd.close()


@click.command("try-revert")
@click.option("--now", is_flag=True, help="Revert even though the deadline has not passed.")
@writing_root
@output_options
def try_revert_command(root: Path, now: bool) -> None:
    """Revert a try (``once-from --try``) whose deadline passed; the timer runs this."""
    node = node_for(Root(root))
    try:
        with writer_lock(node.root, "mcd try-revert"):
            state = trymode.load(node.root)
            reverted = revert_due(node, now=now)
            if reverted is None:
                say(state.describe() if state else "nothing to revert: no try is pending")
                return
            say(reverted)
    except (UpdateError, HostError, StateError, trymode.TryError) as e:
        fail(str(e))
    finally:
        node.effects.systemd.close()
