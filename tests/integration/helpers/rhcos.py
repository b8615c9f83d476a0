"""RHCOS's real top-level symlinks in a test root (``mcd.model.ignition.guards.RHCOS_TOPLEVEL_LINKS``)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from mcd.model.ignition.guards import RHCOS_TOPLEVEL_LINKS


def make_rhcos_links(root: Path) -> None:
    """Turn ``root`` into RHCOS's shape: ``/home -> var/home``, ``/var/run -> ../run``, ...

    What a real directory held moves to the link's target first, as on a real deployment.
    """
    for link, target in sorted(RHCOS_TOPLEVEL_LINKS.items(), key=lambda kv: kv[0].count("/")):
        where = root / link.lstrip("/")
        dest = (where.parent / target).resolve()
        dest.mkdir(parents=True, exist_ok=True)
        if where.is_symlink():
            continue
        if where.is_dir():
            for child in where.iterdir():
                shutil.move(str(child), dest / child.name)
            where.rmdir()
        where.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, where)
