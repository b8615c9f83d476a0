"""A pool's rollouts: ``history``, ``rollback`` and ``prune`` (beyond upstream)."""

from __future__ import annotations

import getpass
import json
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import click

from mcd.cli.common import EXIT_OK, fail, output_options, say, warn

if TYPE_CHECKING:
    from mcd.cluster.api import Kube

# The cluster client loads inside the commands (``mcd --help`` starts without it).

_KUBECONFIG = click.option(
    "--kubeconfig", type=click.Path(dir_okay=False), help="Default: $KUBECONFIG or in-cluster."
)


def _kube(kubeconfig: str | None) -> Kube:
    from mcd.cluster.api import ConfigurationError, Kube, load_client  # noqa: PLC0415

    try:
        return Kube(load_client(kubeconfig))
    except ConfigurationError as e:
        fail(str(e))


@click.command("history")
@click.option("--pool", "pool", required=True, help="The MachineConfigPool.")
@click.option("--json", "as_json", is_flag=True, help="The revisions as JSON.")
@_KUBECONFIG
@output_options
def history_command(pool: str, as_json: bool, kubeconfig: str | None) -> None:
    """List a pool's revisions (its last rendered configs), like kubectl rollout history."""
    from mcd.cluster.api import ApiError  # noqa: PLC0415
    from mcd.cluster.pools import POOLS  # noqa: PLC0415
    from mcd.controller.history import describe_history, revisions  # noqa: PLC0415

    try:
        doc = _kube(kubeconfig).request("GET", f"{POOLS}/{pool}")
    except ApiError as e:
        fail(f"cannot read pool {pool}: {e}")
    if as_json:
        say(json.dumps([r.to_json() for r in revisions(doc)], indent=2))
    else:
        say(describe_history(doc), nl=False)
    sys.exit(EXIT_OK)


@click.command("rollback")
@click.option("--pool", "pool", required=True, help="The MachineConfigPool.")
@click.option("--to-revision", type=int, default=None, help="Default: the one before the target.")
@_KUBECONFIG
@output_options
def rollback_command(pool: str, to_revision: int | None, kubeconfig: str | None) -> None:
    """Point a pool back at an earlier rendered config (rolled out at the pool's pace)."""
    from mcd.cluster.api import ApiError  # noqa: PLC0415
    from mcd.controller.history import RollbackError, rollback  # noqa: PLC0415

    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    try:
        done = rollback(_kube(kubeconfig), pool, to_revision, f"mcd rollback ({user})", now)
    except RollbackError as e:
        fail(str(e))
    except ApiError as e:
        fail(f"pool {pool}: {e}")
    say(done.describe(), nl=False)
    sys.exit(EXIT_OK)


@click.command("prune")
@click.option("--grace", default="24h", show_default=True,
              help="Keep rendered configs younger than this (90m, 4h, 7d).")  # fmt: skip
@click.option("--apply", is_flag=True, help="Delete them (default: only list them).")
@_KUBECONFIG
@output_options
def prune_command(grace: str, apply: bool, kubeconfig: str | None) -> None:
    """List (or, with --apply, delete) the rendered configs no node, pool or revision uses."""
    from mcd.cluster.api import ApiError  # noqa: PLC0415
    from mcd.controller.history import guard_line, prune  # noqa: PLC0415
    from mcd.model.pool.windows import WindowError, parse_duration  # noqa: PLC0415

    try:
        span = parse_duration(grace)
    except WindowError as e:
        fail(f"--grace: {str(e).split('duration: ', 1)[-1]}")
    try:
        done = prune(_kube(kubeconfig), datetime.now(UTC), span, apply)
    except ApiError as e:
        fail(f"cannot prune: {e}")
    for pool, problem in sorted(done.guarded.items()):
        warn(guard_line(pool, problem))
    verb = "deleted" if apply else "would delete (dry run; --apply deletes)"
    for name in done.gone:
        say(f"{verb}: {name}")
    state = "deleted" if apply else "unused"
    why = "used by a node, a pool or a revision, or younger than the grace period"
    if done.guarded:
        why += ", or of a pool whose history cannot be read"
    say(f"{len(done.gone)} rendered configs {state}; {done.kept} kept ({why})")
    sys.exit(EXIT_OK)
