"""Duplicate files, units and users of one spec 2.2 document folded as upstream folds them.

Spec 2 allows a path or a unit twice in one document; spec 3 does not. Before converting,
upstream's ``removeIgnDuplicateFilesUnitsUsers`` (``pkg/controller/common/helpers.go``)
keeps, walking the entries from the last to the first:

* files: the last entry for each path, in reverse order of those last entries;
* units: the last entry for each name, in reverse order; an earlier duplicate's dropins
  are added to it when no dropin of the same name is there yet;
* users: one user, the last, carrying every user's SSH keys (the last user's first, then
  the earlier users' from the next-to-last back), each key once; every user must be
  ``core``, else the document is refused with upstream's text.

Directories and links are left as they are.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

JSONObj = dict[str, Any]


class DuplicateUserError(ValueError):
    """A spec 2 document names a user other than ``core`` (upstream's text)."""


def fold_v2_duplicates(doc: Mapping[str, Any]) -> JSONObj:
    """A copy of spec 2 document ``doc`` with its duplicates folded as upstream does."""
    out: JSONObj = copy.deepcopy(dict(doc))
    storage = out.get("storage")
    if isinstance(storage, dict) and isinstance(storage.get("files"), list):
        files, seen = [], set()
        for entry in reversed(storage["files"]):
            path = entry.get("path") if isinstance(entry, Mapping) else None
            if path in seen:
                continue
            seen.add(path)
            files.append(entry)
        storage["files"] = files
    systemd = out.get("systemd")
    if isinstance(systemd, dict) and isinstance(systemd.get("units"), list):
        systemd["units"] = _fold_units(systemd["units"])
    passwd = out.get("passwd")
    if isinstance(passwd, dict) and isinstance(passwd.get("users"), list) and passwd["users"]:
        passwd["users"] = [_fold_users(passwd["users"])]
    return out


def _fold_units(units: list[Any]) -> list[Any]:
    kept: list[Any] = []
    by_name: dict[Any, JSONObj] = {}
    for unit in reversed(units):
        name = unit.get("name") if isinstance(unit, Mapping) else None
        if name in by_name:
            target = by_name[name]
            for dropin in unit.get("dropins") or []:
                present = {d.get("name") for d in target.get("dropins") or []}
                if dropin.get("name") not in present:
                    target.setdefault("dropins", [])
                    if target["dropins"] is None:
                        target["dropins"] = []
                    target["dropins"].append(dropin)
            continue
        kept.append(unit)
        if isinstance(unit, dict):
            by_name[name] = unit
    return kept


def _fold_users(users: list[Any]) -> JSONObj:
    for user in reversed(users):
        name = user.get("name") if isinstance(user, Mapping) else None
        if name != "core":
            raise DuplicateUserError(
                f"unexpected user with name: {'' if name is None else name}. "
                "Only core user is supported"
            )
    out: JSONObj = users[-1]
    keys: list[Any] = list(out.get("sshAuthorizedKeys") or [])
    for user in reversed(users[:-1]):
        keys.extend(user.get("sshAuthorizedKeys") or [])
    unique: list[Any] = []
    for key in keys:
        if key not in unique:
            unique.append(key)
    if unique or out.get("sshAuthorizedKeys") is not None:
        out["sshAuthorizedKeys"] = unique
    return out
