"""Shared pieces of the command line: the exit-code table, one-line errors, -v/-q.

The command line is the only layer that turns errors into exit codes. A problem prints one
line on stderr that names its source (file, URL, field, server), never a traceback.

The exit codes, the same for every command: :data:`mcd.cli.exits.TABLE`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from functools import wraps
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, ParamSpec, TextIO, TypeVar

import click

from mcd.cli.exits import (  # re-exported: the commands import them from here
    EXIT_BAD_INPUT,
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_MISMATCH,
    EXIT_OK,
    EXIT_UNRECONCILABLE,
    EXIT_USAGE,
)
from mcd.model.errors import ConfigError
from mcd.model.machineconfig import MachineConfig, load_machine_config
from mcd.model.text import printable

if TYPE_CHECKING:
    from mcd.cluster.wire.transport import Connection

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "EXIT_MISMATCH",
    "EXIT_OK",
    "EXIT_UNRECONCILABLE",
    "EXIT_USAGE",
]

P = ParamSpec("P")
R = TypeVar("R")


def colour(stream: TextIO) -> bool:
    """Colour only on a terminal, and never with ``NO_COLOR`` set (no-color.org)."""
    if os.environ.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def _prefix(word: str, fg: str) -> str:
    return click.style(word, fg=fg, bold=True) if colour(sys.stderr) else word


def fail(message: str, code: int = EXIT_ERROR) -> NoReturn:
    """``error: <message>`` on stderr, then exit ``code``."""
    click.echo(f"{_prefix('error:', 'red')} {printable(message)}", err=True)  # one line
    sys.exit(code)


def warn(message: str) -> None:
    if not quiet():
        click.echo(f"{_prefix('warning:', 'yellow')} {printable(message)}", err=True)


def verbosity() -> int:
    """-1 with ``-q``, 0 by default, 1 with ``-v``, 2 with ``-vv``."""
    ctx = click.get_current_context(silent=True)
    return int(ctx.meta.get("mcd.verbosity", 0)) if ctx else 0


def quiet() -> bool:
    return verbosity() < 0


def say(text: str, nl: bool = True) -> None:
    """A result for people, on stdout; ``-q`` keeps it back (the exit code still tells).

    The last guard of the terminal: whatever a printer let through, no control character but
    newline and tab reaches stdout raw (:func:`mcd.model.text.printable`, the escaping every
    printer applies to text from the cluster or a node, one line each)."""
    if not quiet():
        click.echo(printable(text, keep="\n\t"), nl=nl)


def _set_context(ctx: click.Context, _: click.Parameter, value: str | None) -> None:
    if value:
        ctx.meta["mcd.context"] = value


def kube_options(fn: Callable[P, R]) -> Callable[P, R]:
    """``--kubeconfig FILE`` and ``--context NAME``, found as kubectl finds them
    (:func:`connect`)."""
    fn = click.option(
        "--context",
        expose_value=False,
        callback=_set_context,
        help="The kubeconfig context to use (default: its current-context).",
    )(fn)
    return click.option(
        "--kubeconfig",
        type=click.Path(dir_okay=False),
        help="Default, as kubectl: $KUBECONFIG (a:b merged), ~/.kube/config, in-cluster.",
    )(fn)


def connect(kubeconfig: str | None) -> Connection:
    """The API server as kubectl finds it, with ``--context``; one line and exit 1 when no
    configuration can be used."""
    from mcd.cluster.api import ConfigurationError, load_client  # noqa: PLC0415  (lazy)

    ctx = click.get_current_context(silent=True)
    context = str(ctx.meta.get("mcd.context") or "") or None if ctx else None
    try:
        return load_client(kubeconfig, context=context)
    except ConfigurationError as e:
        fail(str(e))


def _set_verbose(ctx: click.Context, _: click.Parameter, value: int) -> None:
    if value:
        ctx.meta["mcd.verbosity"] = max(int(ctx.meta.get("mcd.verbosity", 0)), 0) + value


def _set_quiet(ctx: click.Context, _: click.Parameter, value: bool) -> None:
    if value:
        ctx.meta["mcd.verbosity"] = -1


def output_options(fn: Callable[P, R]) -> Callable[P, R]:
    """``-v/--verbose`` (repeatable) and ``-q/--quiet``, for every command."""
    fn = click.option(
        "-q",
        "--quiet",
        is_flag=True,
        expose_value=False,
        callback=_set_quiet,
        help="Print only problems (stderr); the exit code tells the result.",
    )(fn)
    return click.option(
        "-v",
        "--verbose",
        count=True,
        expose_value=False,
        callback=_set_verbose,
        help="Say what is done, on stderr (-vv: debug detail).",
    )(fn)


def console_logging(journal: bool = True) -> None:
    """Log lines for people on stderr: warnings by default, progress with ``-v``, debug
    detail with ``-vv``, nothing with ``-q``; and to the journal where journald runs."""
    import logging  # noqa: PLC0415  (plan, diff and validate log nothing: no start-up cost)

    from mcd.host.systemd.journal import configure_console  # noqa: PLC0415  (loads systemd-python)

    v = verbosity()
    level = {-1: logging.CRITICAL + 1, 0: logging.WARNING, 1: logging.INFO}.get(v, logging.DEBUG)
    configure_console(level, journal_level=logging.INFO if journal else None, show_errors=v > 0)


def os_error_text(e: OSError, source: str = "") -> str:
    """``<source>: <why>``, naming the file or URL even when the error does not."""
    reason = getattr(e, "reason", None)  # urllib's URLError / HTTPError
    code = getattr(e, "code", None)
    if code is not None and reason is not None:
        why = f"HTTP {code} {reason}"
    elif reason is not None:
        why = str(getattr(reason, "strerror", None) or reason)
    else:
        why = e.strerror or str(e)
    where = source or (str(e.filename) if e.filename else "")
    return f"{where}: {why}" if where else why


def reports_config_errors(fn: Callable[P, R]) -> Callable[P, R]:
    """Turn ``ConfigError`` and unreadable files into one line on stderr and exit 1."""

    @wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except ConfigError as e:
            fail(str(e))
        except OSError as e:
            fail(os_error_text(e))

    return wrapper


def read_config(path: Path) -> MachineConfig:
    """Load a MachineConfig file; errors name the file."""
    data = path.read_bytes()
    try:
        return load_machine_config(data, default_name=path.stem)
    except ConfigError as e:
        raise ConfigError(f"{path}: {e}") from e


def root_exists(value: Path) -> Path:
    """``value``, when it is a directory; else one line naming it (``--root``) and exit 1."""
    if not value.is_dir():
        why = "not a directory" if value.exists() else "no such directory"
        fail(f"{value}: {why} (--root)")
    return value


def _root_exists(ctx: click.Context, param: click.Parameter, value: Path) -> Path:
    return root_exists(value)


config_file = click.Path(dir_okay=False, path_type=Path)
"""A config file argument: read by the command, so a missing one is an error (exit 1)
naming the file, the same for every command (click's ``exists=True`` would make it a
usage error)."""

existing_root = click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    default="/",
    show_default=True,
    callback=_root_exists,
    help="The node's root directory.",
)
"""``--root DIR`` for commands that only read an existing node root."""

NODE_SIGNS = (
    "/etc/machine-config-daemon",
    "/run/ostree-booted",
    "/var/lib/kubelet",
    "/etc/kubernetes/kubelet.conf",
    "/usr/bin/kubelet",
)
"""What shows a host is a node mcd or the MCO manages: mcd's own state, an ostree boot, a
kubelet. A command that writes a root writes this machine's own ``/`` unasked only there."""


def node_signs(host: str = "/") -> list[str]:
    """The :data:`NODE_SIGNS` found under ``host`` (never following a final symlink)."""
    base = "" if host == "/" else host.rstrip("/")
    return [sign for sign in NODE_SIGNS if os.path.lexists(base + sign)]


def own_root() -> Path:
    """``/`` for a command that writes a root and was given no ``--root``: only on a host
    that shows it is a node; anywhere else one line says how to mean it."""
    if not node_signs():
        fail(
            "refusing to write this machine's own root /: it shows no sign of being a node "
            "mcd or the MCO manages (no /etc/machine-config-daemon/, /run/ostree-booted or "
            "kubelet); pass --root / to mean it, or --root DIR for another root"
        )
    return Path("/")


def _writable_root(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path:
    return root_exists(own_root() if value is None else value)


ROOT_HELP = (
    "The node's root directory. Without it: / on a node (mcd's state, /run/ostree-booted "
    "or a kubelet found), else refused: pass --root / to mean this machine."
)

writing_root = click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    callback=_writable_root,
    help=ROOT_HELP,
)
"""``--root DIR`` for commands that change an existing node root: no surprise writes to the
machine the command runs on (:func:`own_root`)."""

policy_option = click.option(
    "--policy",
    "policy_file",
    type=config_file,
    help="A MachineConfiguration (kind MachineConfiguration) whose spec.nodeDisruptionPolicy "
    "is merged over the default policies.",
)
"""``--policy FILE`` of ``plan``."""

from_cluster_option = click.option(
    "--from-cluster",
    "node_name",
    metavar="NODE",
    help="Plan NODE's currentConfig -> desiredConfig with the configs and the node disruption "
    "policies read from the cluster, as the agent does.",
)
"""``--from-cluster NODE`` of ``plan``."""


FORMATS = ("json", "yaml", "wide")
_OUTPUT = "mcd.output"


def _set(ctx: click.Context, _: click.Parameter, value: str | bool | None) -> None:
    if value is True:
        ctx.meta[_OUTPUT] = "json"
    elif isinstance(value, str) and value:
        ctx.meta[_OUTPUT] = value


def output_option(formats: Sequence[str] = FORMATS) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """``-o/--output FORMAT`` (one of ``formats``) and the hidden ``--json``."""

    def decorate(fn: Callable[P, R]) -> Callable[P, R]:
        fn = click.option(
            "--json",
            is_flag=True,
            hidden=True,
            expose_value=False,
            callback=_set,
            help="The same as -o json.",
        )(fn)
        return click.option(
            "-o",
            "--output",
            type=click.Choice(list(formats)),
            expose_value=False,
            callback=_set,
            help="Print " + "|".join(formats) + " instead of the table (as kubectl's -o).",
        )(fn)

    return decorate


def output_format() -> str:
    """``json``, ``yaml`` or ``wide`` as asked with ``-o``; '' for the default table."""
    ctx = click.get_current_context(silent=True)
    return str(ctx.meta.get(_OUTPUT, "")) if ctx else ""


def plan_flags(fn: Callable[P, R]) -> Callable[P, R]:
    """``--force``, ``--legacy`` and ``-o json|yaml|wide`` of ``plan`` (wide: the same text)."""
    fn = output_option()(fn)
    fn = click.option("--legacy", is_flag=True, help="Use the firstboot/once-from action table.")(
        fn
    )
    return click.option(
        "--force", is_flag=True, help="Plan as if /run/machine-config-daemon-force existed."
    )(fn)
