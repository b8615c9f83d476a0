"""``--root DIR`` for the commands that upstream gives ``--root-mount`` (``start``,
``firstboot-complete-machineconfig``): the same name as every other command, with
``--root-mount`` kept as a hidden, deprecated alias so that upstream's manifests and runbooks
(``--root-mount=/rootfs``) still work."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Any

import click

F = Callable[..., Any]


def mounted_root(default: str, help_text: str) -> Callable[[F], F]:
    """Pass the command ``root``: ``--root``, else the deprecated ``--root-mount``, else
    ``default`` (the command checks it exists, after its usage checks, with
    :func:`mcd.cli.common.root_exists`). Both given, different, is a usage error."""

    def decorate(fn: F) -> F:
        @wraps(fn)
        def wrapper(*args: Any, root: Path | None, root_mount: Path | None, **kw: Any) -> Any:
            if root is not None and root_mount is not None and root != root_mount:
                raise click.UsageError("give --root (--root-mount is its old name), not both")
            chosen = root if root is not None else root_mount
            return fn(*args, root=chosen if chosen is not None else Path(default), **kw)

        path = click.Path(file_okay=False, path_type=Path)
        wrapper = click.option("--root-mount", "root_mount", type=path, default=None,
                               hidden=True, help="Deprecated: --root.")(wrapper)  # fmt: skip
        return click.option("--root", "root", type=path, default=None,
                            help=f"{help_text}  [default: {default}]")(wrapper)  # fmt: skip

    return decorate
