"""The gate's second half: where a config's targets land on this node, judged before any write.

The pure gate (:mod:`mcd.model.gate`) has already refused every path that is not
clean, and every clean path that a guard forbids as written. Here each target is
resolved inside the root through the node's own symlinks (``/var/run -> ../run``,
``/home -> var/home``, ``/lib -> usr/lib`` on RHCOS) and the same guards judge
where it lands: a kernel filesystem, mcd's own state, the force file, core's SSH
keys, a unit or dropin location, read-only ``/usr`` on ostree. Two entries that
land on the same file are refused, and so is a parent symlink that leaves the
root or loops, a directory in the way, a file where a directory should be.
"""

from __future__ import annotations

import errno
import os

from mcd.host.accounts.passwd import Accounts
from mcd.host.errors import HostError
from mcd.host.fs import fsops
from mcd.host.rootfs import Root
from mcd.model.ignition.config import IgnitionConfig
from mcd.model.ignition.guards import (
    SSH_KEY_PATHS,
    STATE_PATHS,
    file_guard,
    on_readonly_usr,
    under,
    unit_guard,
)
from mcd.model.text import goquote
from mcd.model.vocabulary import FORCE_FILE, dropin_path, unit_path

READONLY_USR = "is on the read-only /usr of an ostree system (only /usr/local is writable)"


class Resolver:
    """Node paths as they land inside one root, and the guarded places as they land there."""

    def __init__(self, root: Root) -> None:
        self.root = root
        self.special = [
            (self._land(p, follow_last=p in STATE_PATHS), p)
            for p in (FORCE_FILE, *SSH_KEY_PATHS, *STATE_PATHS)
        ]

    def _land(self, path: str, follow_last: bool = False) -> str:
        try:
            return self.root.resolve(path, follow_last=follow_last)
        except OSError as e:
            if e.errno != errno.ELOOP:
                raise
            raise HostError(f"refusing to write {path}: too many levels of symlinks") from e

    def land(self, path: str) -> str:
        """Where a write of ``path`` lands (parents followed; a symlink at the end is replaced)."""
        try:
            host = fsops.target_path(self.root, path)  # refuses escapes with the usual words
        except OSError as e:
            if e.errno != errno.ELOOP:
                raise
            raise HostError(f"refusing to write {path}: too many levels of symlinks") from e
        if self.root.path == "/":
            return host
        return host[len(self.root.path) :] or "/"

    def canonical(self, landed: str) -> str:
        """``landed`` named the way the guards know it (``/var/home/core/...`` -> ``/home/...``)."""
        for where, name in self.special:
            if landed == where:
                return name
            if name in STATE_PATHS and under(landed, where):
                return name + landed[len(where) :]
        return landed

    def file_problem(self, path: str, landed: str, ostree: bool) -> str | None:
        problem = file_guard(self.canonical(landed))
        if problem is None and ostree and on_readonly_usr(landed):
            problem = READONLY_USR
        return problem


def check_targets(root: Root, cfg: IgnitionConfig, *, ostree: bool) -> None:
    """Raise ``HostError`` naming the field for the first target this node cannot take."""
    resolver = Resolver(root)
    landed_at: dict[str, str] = {}
    unit_targets = {
        resolver.land(path)
        for unit in cfg.units
        for path in (
            *((unit_path(unit.name),) if unit.contents or unit.mask else ()),
            *(dropin_path(unit.name, d.name) for d in unit.dropins),
        )
    }
    for i, file in enumerate(cfg.files):
        fld = f"spec.config.storage.files[{i}].path"
        landed = resolver.land(file.path)
        problem = resolver.file_problem(file.path, landed, ostree)
        if problem is None and landed in unit_targets:
            problem = f"{goquote(landed)} conflicts with a systemd unit or dropin"
        if problem == READONLY_USR and landed == file.path:
            raise HostError(f"ignition file {file.path} {READONLY_USR}")
        if problem is not None:
            raise HostError(f"{fld}: {_where(file.path, landed, resolver)}{problem}")
        if landed in landed_at:
            via = "" if landed == file.path else f" resolves to {goquote(landed)} on this node,"
            raise HostError(
                f"{fld}: {goquote(file.path)}{via} is the same file as {landed_at[landed]}"
            )
        landed_at[landed] = f"storage.files[{i}] ({goquote(file.path)})"
    for i, unit in enumerate(cfg.units):
        paths = [unit_path(unit.name), *(dropin_path(unit.name, d.name) for d in unit.dropins)]
        for path in paths:
            landed = resolver.land(path)
            problem = unit_guard(resolver.canonical(landed))
            if problem is None and ostree and on_readonly_usr(landed):
                problem = READONLY_USR
            if problem is not None:
                where = _where(path, landed, resolver)
                raise HostError(f"spec.config.systemd.units[{i}]: {where}{problem}")
    _check_shapes(root, cfg)


def _where(path: str, landed: str, resolver: Resolver) -> str:
    """How ``path`` reaches the guarded place: through a symlink, or as another name of it."""
    if landed != path:
        return f"{goquote(path)} resolves to {goquote(landed)} on this node: "
    canonical = resolver.canonical(landed)
    if canonical != path:
        return f"{goquote(path)} is {goquote(canonical)} on this node: "
    return ""


def _check_shapes(root: Root, cfg: IgnitionConfig) -> None:
    """A directory where a file goes, a file where a directory goes; owners the node knows."""
    paths = [f.path for f in cfg.files]
    for unit in cfg.units:
        paths.append(unit_path(unit.name))
        paths.extend(dropin_path(unit.name, d.name) for d in unit.dropins)
    prefix = root.path.rstrip("/")  # '' for a live host's '/': every node path is under it
    for path in paths:
        host_path = fsops.target_path(root, path)
        if os.path.isdir(host_path) and not os.path.islink(host_path):
            raise HostError(f"cannot write file {path}: a directory is in the way")
        parent = os.path.dirname(host_path)
        while not os.path.lexists(parent) and parent.startswith(prefix + "/"):
            parent = os.path.dirname(parent)
        if not os.path.isdir(parent):
            where = parent.removeprefix(prefix) or "/"
            raise HostError(f"cannot write file {path}: {where} is not a directory")
    accounts = Accounts(root)
    for file in cfg.files:
        accounts.ownership(file)
