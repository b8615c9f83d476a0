"""A pool's rollouts: ``history``, ``rollback`` and ``prune`` (beyond upstream)."""

from __future__ import annotations

import getpass
import sys
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import click

from mcd.cli.common import EXIT_OK, connect, fail, kube_options, output_options, say, warn
from mcd.cli.output import clean, columns, emit, human_duration, output_option

if TYPE_CHECKING:
    from mcd.cluster.api import Kube

# The cluster client loads inside the commands (``mcd --help`` starts without it).

_KUBECONFIG = kube_options


def _kube(kubeconfig: str | None) -> Kube:
    from mcd.cluster.api import Kube  # noqa: PLC0415

    return Kube(connect(kubeconfig))


@click.command("history")
@click.option("--pool", "pool", required=True, help="The MachineConfigPool.")
@output_option()
@_KUBECONFIG
@output_options
def history_command(pool: str, kubeconfig: str | None) -> None:
    """List a pool's revisions (its last rendered configs), like kubectl rollout history.

    Everything shown comes from the pool's history annotation, its control characters
    escaped (a hand-edited annotation cannot reach the terminal raw)."""
    from mcd.cluster.api import ApiError  # noqa: PLC0415
    from mcd.cluster.pools import POOLS  # noqa: PLC0415
    from mcd.controller.history import revisions  # noqa: PLC0415

    try:
        doc = _kube(kubeconfig).request("GET", f"{POOLS}/{pool}")
    except ApiError as e:
        fail(f"cannot read pool {pool}: {e}")
    emit([r.to_json() for r in revisions(doc)], lambda wide: _history_table(doc, wide))
    sys.exit(EXIT_OK)


def _history_table(pool: dict[str, object], wide: bool) -> str:
    """``kubectl rollout history``'s table, the pool's target marked (-o wide: the same)."""
    from mcd.controller.history import revisions  # noqa: PLC0415
    from mcd.model.pool.history import ROLLBACK_ANNOTATION, parse_pin  # noqa: PLC0415
    from mcd.model.pool.pools import target_of  # noqa: PLC0415

    rows = revisions(pool)
    target = target_of(pool)
    table = [["REVISION", "CONFIG", "TIME", "BY", "CHANGE"]]
    for r in rows:
        mark = " (target)" if r.config == target else ""
        table.append(
            [str(r.revision), r.config + mark, r.time or "-", r.by or "-", r.change or "-"]
        )
    lines = columns(table)
    if not rows:
        lines.append("(no revisions recorded yet)")
    meta = pool.get("metadata")
    annotations = (meta.get("annotations") if isinstance(meta, dict) else None) or {}
    pin = parse_pin(annotations.get(ROLLBACK_ANNOTATION))
    if pin is not None and pin.config == target:
        lines.append(
            f"Rolled back to {clean(pin.config)}: held while the MachineConfigs render to "
            f"{clean(pin.rendered)}; a MachineConfig change, or removing the annotation "
            f"{ROLLBACK_ANNOTATION}, ends it"
        )
    return "\n".join(lines) + "\n"


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


NEVER = "0 rendered configs unused: --grace 0 never prunes (as controller --prune-grace 0)\n"


def _grace(ctx: click.Context, param: click.Parameter, value: str) -> float:
    """``--grace`` in seconds; ``0`` means never, as the controller's ``--prune-grace 0``.
    A value that is no duration is a usage error (exit 64), as every bad flag value."""
    from mcd.model.pool.windows import WindowError, parse_duration  # noqa: PLC0415

    if value.strip() == "0":
        return 0.0
    try:
        return parse_duration(value).total_seconds()
    except WindowError as e:
        raise click.BadParameter(str(e).split("duration: ", 1)[-1]) from None


@click.command("prune")
@click.option("--grace", default="24h", show_default=True, callback=_grace,
              help="Keep rendered configs younger than this (90m, 4h, 7d; 0: keep every one, "
                   "as the controller's --prune-grace 0).")  # fmt: skip
@click.option("--apply", is_flag=True, help="Delete them (default: only list them).")
@output_option()
@_KUBECONFIG
@output_options
def prune_command(grace: float, apply: bool, kubeconfig: str | None) -> None:
    """List (or, with --apply, delete) the rendered configs no node, pool or revision uses."""
    from mcd.cluster.api import ApiError  # noqa: PLC0415
    from mcd.controller.history import guard_line, prune  # noqa: PLC0415

    kube = _kube(kubeconfig)
    gone: list[str] = []
    kept = 0
    guarded: dict[str, str] = {}
    if grace != 0:
        try:
            done = prune(kube, datetime.now(UTC), timedelta(seconds=grace), apply)
        except ApiError as e:
            fail(f"cannot prune: {e}")
        gone, kept, guarded = done.gone, done.kept, done.guarded
    for pool, problem in sorted(guarded.items()):
        warn(clean(guard_line(pool, problem)))
    state = "deleted" if apply else "unused"
    doc = {"apply": apply, "grace": human_duration(grace) if grace else "never",
           state: gone, "kept": kept, "guarded": guarded}  # fmt: skip

    def table(wide: bool) -> str:
        if grace == 0:
            return NEVER
        verb = "deleted" if apply else "would delete (dry run; --apply deletes)"
        lines = [f"{verb}: {clean(name)}" for name in gone]
        why = "used by a node, a pool or a revision, or younger than the grace period"
        if guarded:
            why += ", or of a pool whose history cannot be read"
        lines.append(f"{len(gone)} rendered configs {state}; {kept} kept ({why})")
        return "\n".join(lines) + "\n"

    emit(doc, table)
    sys.exit(EXIT_OK)
