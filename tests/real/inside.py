"""mcd run INSIDE a real systemd container, as an admin on the node would run it: the container's
Debian ``python3`` runs the checkout (bound read-only at its own path) with the venv's
``site-packages`` for its dependencies (``PYTHONPATH``).
"""

from __future__ import annotations

import json
import sys
import sysconfig
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from mcd.model.vocabulary import CURRENT_CONFIG_PATH
from tests.real.systemd_container import SystemdContainer, unavailable

REPO = Path(__file__).resolve().parents[2]
# the venv's packages (mcd's dependencies), bound where they are unless the checkout holds them
SITES = tuple(dict.fromkeys(Path(sysconfig.get_paths()[k]) for k in ("purelib", "platlib")))
PYTHONPATH = ":".join(map(str, (REPO, *SITES)))


class InsideNode:
    """The container, with mcd run inside it."""

    def __init__(self, container: SystemdContainer) -> None:
        self.c = container

    def mcd(self, *args: str) -> tuple[int, str, str]:
        result = self.c.run("python3", "-m", "mcd", *args, env={"PYTHONPATH": PYTHONPATH})
        return result.returncode, result.stdout, result.stderr

    def sh(self, *argv: str) -> str:
        result = self.c.run(*argv)
        assert result.returncode == 0, f"{argv}: {result.stderr}"
        return result.stdout

    def path(self, node_path: str) -> Path:
        return self.c.root / node_path.lstrip("/")

    def write_config(self, name: str, doc: dict[str, Any]) -> str:
        """``doc`` as ``/var/tmp/<name>.json`` on the node; its path there."""
        path = f"/var/tmp/{name}.json"
        self.path(path).write_text(json.dumps(doc))
        return path

    def current(self) -> str:
        doc = json.loads(self.path(CURRENT_CONFIG_PATH).read_text())
        return str(doc["metadata"]["name"])


@contextmanager
def booted_container(
    prepare: Callable[[Path], None] = lambda root: None, **container_args: Any
) -> Iterator[SystemdContainer]:
    """A booted container that can run mcd from this checkout (``prepare`` sees its root before
    the boot); skips where real systemd or a matching ``python3`` is missing."""
    why = unavailable() or (None if Path("/usr/bin/nsenter").exists() else "no nsenter")
    if why:
        pytest.skip(f"real systemd: {why}")
    binds = (REPO, *(s for s in SITES if not s.is_relative_to(REPO)))
    container = SystemdContainer(bind_ro=binds, **container_args)
    try:
        prepare(container.root)
        container.boot()
        mine = f"{sys.version_info.major}.{sys.version_info.minor}"
        theirs = InsideNode(container).sh(
            "python3", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"
        )
        if theirs.strip() != mine:
            pytest.skip(f"the container's python3 is {theirs.strip()}, the venv's {mine}")
        yield container
    finally:
        container.close()
