"""What an update from one config to another writes or removes on disk, and the preflight that
refuses it when one of those paths cannot be written or undone.

The paths touched are the new config's files that differ from the old one's (or drifted from
what both say; all of them with the force file), the units and dropins that change, and the
old config's files, units and dropins that leave it. A file both configs agree on and that
still matches is left alone by the update and by its rollback, so an immutable one is fine.
"""

from __future__ import annotations

import os

from mcd.host.errors import HostError
from mcd.host.fs import attrs, fsops
from mcd.host.ondisk.validation import check_file
from mcd.host.rootfs import Root
from mcd.model.errors import ConfigError
from mcd.model.ignition.config import File, IgnitionConfig, Unit
from mcd.model.text import goquote
from mcd.model.vocabulary import dropin_path, unit_path


def drifted(root: Root, file: File) -> bool:
    """Whether ``file`` is no longer on disk as its config says (then an update, or its
    rollback, rewrites it even though both configs agree on it)."""
    try:
        data = file.data()
    except ConfigError:
        return True
    return check_file(root, file.path, data, file.effective_mode) != ""


def touched_paths(
    root: Root, old: IgnitionConfig, new: IgnitionConfig, *, force: bool = False
) -> list[str]:
    """Every node path an update from ``old`` to ``new`` writes or removes, in config order."""
    same = set() if force else set(old.files)
    paths = [f.path for f in new.files if f not in same or drifted(root, f)]
    new_paths = {f.path for f in new.files}
    paths += [f.path for f in old.files if f.path not in new_paths]
    old_units = {u.name: u for u in old.units}
    new_units = {u.name: u for u in new.units}
    for unit in new.units:
        if force or old_units.get(unit.name) != unit:
            paths += _unit_paths(unit)
    for unit in old.units:
        if unit.name not in new_units:
            paths += _unit_paths(unit)
        elif new_units[unit.name] != unit:
            kept_dropins = {d.name for d in new_units[unit.name].dropins}
            paths += [
                dropin_path(unit.name, d.name) for d in unit.dropins if d.name not in kept_dropins
            ]
    return list(dict.fromkeys(paths))


def _unit_paths(unit: Unit) -> list[str]:
    paths = [dropin_path(unit.name, d.name) for d in unit.dropins]
    return [unit_path(unit.name), *paths] if unit.contents or unit.mask is not None else paths


def check_changeable(root: Root, paths: list[str]) -> None:
    """Refuse, in one line naming it, the first path that is immutable or append-only, or
    whose directory is: its write (or its rollback) would fail half-way through an update."""
    prefix = root.path.rstrip("/")
    for path in paths:
        host_path = fsops.target_path(root, path)
        why = attrs.unchangeable(host_path)
        if why:
            raise HostError(f"refusing to write {goquote(path)}: it is {why}; nothing was written")
        parent = os.path.dirname(host_path)
        while not os.path.lexists(parent) and parent.startswith(prefix + "/"):
            parent = os.path.dirname(parent)  # the directory the first new entry goes in
        why = attrs.unchangeable(parent)
        if why:
            where = parent.removeprefix(prefix) or "/"
            raise HostError(
                f"refusing to write {goquote(path)}: its directory {goquote(where)} is {why}; "
                "nothing was written"
            )
