"""What runc and systemd-nspawn leave behind in the host's cgroup tree after a container."""

from __future__ import annotations

import contextlib
from pathlib import Path


def remove_empty(cgroup: Path) -> None:
    """Remove ``cgroup`` and its children, deepest first; a cgroup still in use stays (its
    ``rmdir`` fails and is passed over)."""
    for sub in sorted(cgroup.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        if sub.is_dir():
            with contextlib.suppress(OSError):
                sub.rmdir()
    with contextlib.suppress(OSError):
        cgroup.rmdir()
