"""Shared pieces of the command line: exit codes and one-line error reporting.

The command line is the only layer that turns errors into exit codes. Bad
input prints one clear line on stderr (never a traceback) and exits 1.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import NoReturn, ParamSpec, TypeVar

import click

from mcd.model.errors import ConfigError
from mcd.model.machineconfig import MachineConfig, load_machine_config

EXIT_OK = 0
EXIT_BAD_INPUT = 1
EXIT_UNRECONCILABLE = 2

P = ParamSpec("P")
R = TypeVar("R")


def fail(message: str) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(EXIT_BAD_INPUT)


def reports_config_errors(fn: Callable[P, R]) -> Callable[P, R]:
    """Turn ``ConfigError`` and unreadable files into one line on stderr and exit 1."""

    @wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except ConfigError as e:
            fail(str(e))
        except OSError as e:
            fail(f"{e.filename or ''}: {e.strerror or e}")

    return wrapper


def read_config(path: Path) -> MachineConfig:
    """Load a MachineConfig file; errors name the file."""
    data = path.read_bytes()
    try:
        return load_machine_config(data, default_name=path.stem)
    except ConfigError as e:
        raise ConfigError(f"{path}: {e}") from e


existing_root = click.option(
    "--root",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default="/",
    show_default=True,
    help="The node's root directory.",
)
"""``--root DIR`` for commands that read or repair an existing node root."""
