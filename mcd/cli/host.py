"""Commands that change this host, no cluster needed: once-from, pivot, firstboot, restore."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from mcd.agent.boot.firstboot import ENCAPSULATED, firstboot_complete
from mcd.agent.commands import recovery
from mcd.agent.commands.once import node_for, run_once
from mcd.agent.commands.pivot import PULLSPEC, pivot
from mcd.agent.commands.restore import RestoreError, restore
from mcd.agent.safety.trymode import TryError
from mcd.agent.update.journal import StateError
from mcd.agent.update.transaction import UpdateError
from mcd.cli.common import (
    EXIT_ERROR,
    EXIT_MISMATCH,
    ROOT_HELP,
    config_file,
    console_logging,
    fail,
    os_error_text,
    output_options,
    own_root,
    read_config,
    reports_config_errors,
    root_exists,
    say,
    writing_root,
)
from mcd.cli.exits import EXIT_UNCHANGED
from mcd.cli.mountedroot import mounted_root
from mcd.host.errors import HostError
from mcd.host.rootfs import Root
from mcd.model.errors import ConfigError
from mcd.model.node.health import parse_duration
from mcd.model.text import printable


def _duration(
    ctx: click.Context, param: click.Parameter, value: str | None
) -> tuple[str, float] | None:
    if value is None:
        return None
    try:
        return value, parse_duration(value)
    except ConfigError as e:
        raise click.BadParameter(str(e)) from e


@click.command("once-from")
@click.argument("source")
@click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help=ROOT_HELP + " Created if missing.",
)
@click.option("--skip-reboot", is_flag=True, help="Apply everything but do not reboot.")
@click.option(
    "--try",
    "try_for",
    metavar="DURATION",
    callback=_duration,
    help="Revert on its own after DURATION (90s, 10m, 1h) unless `mcd confirm` arrives.",
)
@output_options
@reports_config_errors
def once_from_command(
    source: str, root: Path | None, skip_reboot: bool, try_for: tuple[str, float] | None
) -> None:
    """Apply SOURCE (a MachineConfig or Ignition config, path or http(s) URL) once, with no cluster.

    The node's previous config is its on-disk currentconfig. On a root no systemd runs
    (a directory), reloads and restarts are recorded as skipped, with a note.
    Exit 0 when applied (or the reboot is queued or skipped), 2 when the change
    cannot be applied to this node, 1 on any other failure (everything rolled back).
    """
    root = own_root() if root is None else root
    console_logging()
    try_seconds = try_for[1] if try_for is not None else None
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        fail(f"{root}: cannot create the root: {e.strerror or e} (--root)")
    node = node_for(Root(root))
    try:
        result = run_once(source, node, skip_reboot=skip_reboot, try_seconds=try_seconds)
    except UpdateError as e:
        unreconcilable = str(e).startswith("can't reconcile")
        fail(str(e), EXIT_MISMATCH if unreconcilable else EXIT_ERROR)
    except (HostError, StateError, TryError) as e:  # another writer; a damaged journal
        fail(str(e))
    except OSError as e:  # the source: a missing file, an unreachable URL
        fail(os_error_text(e, source))
    finally:
        node.effects.systemd.close()
    for line in result.describe(str(root)):
        say(line)
    if try_for is not None and result.current == result.config:
        say(f"trying {printable(result.config)}: reverts in {try_for[0]} unless `mcd confirm`")


@click.command("pivot")
@click.argument("image", required=False)
@click.option("-P", "--from-etc-pullspec", is_flag=True, help=f"Read the image from {PULLSPEC}.")
@click.option("-r", "--reboot", is_flag=True, help="Reboot if the OS changed.")
@click.option("--unchanged-exit-77", is_flag=True, help="Exit 77 when already on the image.")
@writing_root
@output_options
def pivot_command(
    image: str | None, from_etc_pullspec: bool, reboot: bool, unchanged_exit_77: bool, root: Path
) -> None:
    """Force an OS pivot to IMAGE (or the pullspec file) with rpm-ostree.

    Exit 0 when pivoted or unchanged (77 with --unchanged-exit-77), 1 on failure.
    """
    console_logging()
    if image and from_etc_pullspec:
        fail("give an IMAGE or --from-etc-pullspec, not both")
    node = node_for(Root(root))
    try:
        assert node.rpm is not None
        result = pivot(node.root, node.rpm, image)
        if (result.changed or result.kargs_changed) and reboot:
            node.effects.systemd.reboot(f"pivot to {result.image}")
    except HostError as e:
        fail(str(e))
    finally:
        node.effects.systemd.close()
    if not result.changed and not result.kargs_changed and unchanged_exit_77:
        sys.exit(EXIT_UNCHANGED)
    say(f"{'pivoted' if result.changed else 'unchanged'}: {result.image}")


@click.command("firstboot-complete-machineconfig")
@click.option("--machineconfig-file", default=ENCAPSULATED, show_default=True,
              help="The encapsulated MachineConfig, a path on the node.")  # fmt: skip
@mounted_root("/rootfs", "The node's root filesystem (--root-mount, its old name, still works).")
@click.option("--skip-reboot", is_flag=True, help="Apply, but do not reboot.")
@output_options
@reports_config_errors
def firstboot_command(machineconfig_file: str, root: Path, skip_reboot: bool) -> None:
    """Apply the MachineConfig encapsulated at install time, then reboot (firstboot service).

    Exit 0 when applied (or the reboot is queued), 1 on failure (rolled back).
    """
    console_logging()
    node = node_for(Root(root_exists(root)))
    try:
        outcome = firstboot_complete(node, machineconfig_file, skip_reboot=skip_reboot)
    except (UpdateError, HostError) as e:
        fail(str(e))
    finally:
        node.effects.systemd.close()
    say(f"{outcome}: {machineconfig_file}")


@click.command("restore")
@click.argument("paths", nargs=-1)
@writing_root
@click.option(
    "--config",
    "config_file",
    type=config_file,
    help="Restore from this MachineConfig instead of the node's currentconfig.",
)
@output_options
@reports_config_errors
def restore_command(paths: tuple[str, ...], root: Path, config_file: Path | None) -> None:
    """Rewrite drifted managed files (all, or PATHS) with their exact bytes, mode and owner.

    The source is the node's current config. Prints what was restored and why,
    never the contents. Exit 0 when everything named matches afterwards, 1 otherwise.
    """
    console_logging()
    node = node_for(Root(root))
    try:
        config = read_config(config_file) if config_file else None
        mc, restored, clean = restore(node, paths, config)
    except RestoreError as e:
        fail(str(e))
    finally:
        node.effects.systemd.close()
    for item in restored:
        say(f"restored {printable(item.path)}: was {item.problem}")
    for path in clean:
        say(f"unchanged {printable(path)}: already matches {mc.name}")
    if not restored and not clean:
        say(f"nothing to restore: the node matches {mc.name}")


@click.command("recover")
@click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The node's root directory (default / to inspect; to change it, as once-from).",
)
@click.option("--finish", "action", flag_value="finish", help="Complete the interrupted update.")
@click.option("--abandon", "action", flag_value="abandon",
              help="Set the interrupted update's journal aside; change nothing else.")  # fmt: skip
@click.option(
    "--current",
    "current_file",
    type=config_file,
    help="Write CONFIG as currentconfig (only when the node's own is unreadable).",
)
@output_options
@reports_config_errors
def recover_command(root: Path | None, action: str | None, current_file: Path | None) -> None:
    """Inspect mcd's state files; finish or abandon an interrupted update; replace an
    unreadable currentconfig. Exit 0 when the state is usable (or was repaired), 1 otherwise."""
    if root is None:  # inspecting reads /; a repair writes it only on a node (once-from's rule)
        root = own_root() if action or current_file is not None else Path("/")
    root_exists(root)
    console_logging()
    node_root = Root(root)
    try:
        if current_file is not None:
            say(recovery.set_current(node_root, current_file.read_bytes(), str(current_file)))
        elif action == "abandon":
            say(recovery.abandon(node_root))
        elif action == "finish":
            node = node_for(node_root)
            try:
                say(recovery.finish(node))
            finally:
                node.effects.systemd.close()
        else:
            lines, ok = recovery.inspect(node_root)
            for line in lines:
                say(line)
            if not ok:
                sys.exit(EXIT_ERROR)
    except (recovery.RecoveryError, UpdateError, HostError, StateError) as e:
        fail(str(e))
