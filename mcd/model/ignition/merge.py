"""Ignition documents as spec 3 JSON, and Ignition's own merge of a child into a parent.

The render controller merges the MachineConfigs of a pool the way upstream does
(``ign3.Merge`` from ``coreos/ignition/v2/config/merge``), on the JSON form:

* an object member the child sets replaces the parent's, objects merge recursively, a
  member the child leaves out keeps the parent's value;
* a list of keyed entries (files, directories and links by ``path``, units and dropins
  and users and groups by ``name``, disks and filesystems by ``device``, ...) merges
  entries with the same key and appends the child's new ones; ``storage.files``,
  ``directories`` and ``links`` share one key space, so a child's link at a path removes
  the parent's file there (and ``kernelArguments.shouldExist``/``shouldNotExist`` share
  theirs);
* lists of plain strings (``sshAuthorizedKeys``, ``groups``) merge by value;
* ``append`` (files) and ``options``/``mountOptions`` (filesystems, luks, raid) append.

Spec 2.2 documents are translated to spec 3 first (``ParseAndConvertConfig``): the
``filesystem: root`` marker goes, ``append: true`` becomes an ``append`` list.
"""

from __future__ import annotations

import copy
import posixpath
from collections.abc import Mapping
from typing import Any

from mcd.model.ignition.parse import LATEST_VERSION, V2_VERSIONS, parse_ignition

JSONObj = dict[str, Any]

# Lists whose entries are simply appended (Ignition's IgnoreDuplicates).
_APPENDED = frozenset({"append", "options", "mountOptions"})
# The key of each keyed list, by the list's member name.
_KEYS = {
    "files": "path",
    "directories": "path",
    "links": "path",
    "units": "name",
    "dropins": "name",
    "users": "name",
    "groups": "name",
    "luks": "name",
    "raid": "name",
    "disks": "device",
    "filesystems": "device",
    "tang": "url",
    "httpHeaders": "name",
    "merge": "source",
    "certificateAuthorities": "source",
    "partitions": "number",
}
# Lists that share one key space inside their parent object (Ignition's MergedKeys).
_SHARED = {
    "files": "node",
    "directories": "node",
    "links": "node",
    "shouldExist": "karg",
    "shouldNotExist": "karg",
}


def to_spec3(doc: object, where: str = "spec.config", parsed: bool = False) -> JSONObj:
    """A validated copy of ``doc`` as spec 3 JSON (version ``LATEST_VERSION``).

    Raises the model's ``ConfigError`` (naming ``where``) when the document does not parse;
    ``parsed``: the caller has already run it through ``parse_ignition``.
    """
    if doc is None or (isinstance(doc, Mapping) and not doc):
        return {"ignition": {"version": LATEST_VERSION}}
    if not parsed:
        parse_ignition(doc, where)  # the same structural checks as the agent's gate
    assert isinstance(doc, Mapping)
    out: JSONObj = copy.deepcopy(dict(doc))
    version = (out.get("ignition") or {}).get("version")
    if version in V2_VERSIONS:
        _from_v2(out)
    out.setdefault("ignition", {})["version"] = LATEST_VERSION
    return out


def _from_v2(doc: JSONObj) -> None:
    """As upstream's ``v23tov30.Translate``: spec 2 files are overwritten by default (an
    appended one is not), empty strings and false flags become unset, paths are joined
    onto the root filesystem's mount point."""
    doc.pop("networkd", None)  # refused by the parser when it has units
    storage = doc.get("storage") or {}
    for key in ("files", "directories", "links"):
        for entry in storage.get(key) or []:
            entry.pop("filesystem", None)
            if isinstance(entry.get("path"), str):
                entry["path"] = posixpath.normpath("/" + entry["path"]).replace("//", "/", 1)
            for owner in ("user", "group"):
                if isinstance(entry.get(owner), dict) and not entry[owner].get("name"):
                    entry[owner].pop("name", None)
            if key == "links" and entry.get("hard") is False:
                del entry["hard"]
    for entry in storage.get("files") or []:
        contents = entry.pop("contents", None) or {}
        contents = {**contents, "source": contents.get("source") or ""}
        if not contents.get("compression"):
            contents.pop("compression", None)
        if entry.pop("append", False) is True:
            entry["overwrite"] = False
            entry["append"] = [contents]
        else:
            entry["contents"] = contents
            if entry.get("overwrite") is None:
                entry["overwrite"] = True
    for unit in (doc.get("systemd") or {}).get("units") or []:
        enable = unit.pop("enable", False)
        if unit.get("enabled") is False:
            pass
        elif unit.get("enabled") is True or enable:
            unit["enabled"] = True
        else:
            unit.pop("enabled", None)
        if unit.get("mask") is False:
            del unit["mask"]
        for entry in [unit, *(unit.get("dropins") or [])]:
            if entry.get("contents") == "":
                del entry["contents"]
    (doc.get("ignition") or {}).pop("config", None)


def merge(parent: JSONObj, child: JSONObj) -> JSONObj:
    """Ignition's merge of ``child`` over ``parent``.

    Neither input is changed, but the result shares the parts nothing merged into with
    them (a render of 2,000 files must not copy them twenty times): copy it before
    changing it in place, unless the inputs are yours to change.
    """
    return _merge_object(parent, child)


def _merge_object(parent: Mapping[str, Any], child: Mapping[str, Any]) -> JSONObj:
    result: JSONObj = {}
    shared = _shared_removals(parent, child)
    for key in list(parent) + [k for k in child if k not in parent]:
        p, c = parent.get(key), child.get(key)
        if c is None and isinstance(p, list) and shared.get(key):
            result[key] = _merge_list(key, p, [], shared[key])
        elif c is None:
            if key in parent:
                result[key] = p
        elif p is None:
            result[key] = c
        elif isinstance(p, Mapping) and isinstance(c, Mapping):
            result[key] = _merge_object(p, c)
        elif isinstance(p, list) and isinstance(c, list):
            result[key] = _merge_list(key, p, c, shared.get(key, frozenset()))
        else:
            result[key] = c
    return result


def _key(list_name: str, entry: Any) -> str:
    if isinstance(entry, Mapping):
        value = entry.get(_KEYS.get(list_name, ""), "")
        return "" if value is None else str(value)
    return str(entry)


def _shared_removals(
    parent: Mapping[str, Any], child: Mapping[str, Any]
) -> dict[str, frozenset[str]]:
    """Per parent list: keys the child defines in another list of the same key space."""
    removals: dict[str, frozenset[str]] = {}
    for name, space in _SHARED.items():
        if not isinstance(parent.get(name), list):
            continue
        others = {
            _key(other, e)
            for other, other_space in _SHARED.items()
            if other_space == space and other != name and isinstance(child.get(other), list)
            for e in child[other]
        }
        removals[name] = frozenset(others)
    return removals


def _merge_list(name: str, parent: list[Any], child: list[Any], drop: frozenset[str]) -> list[Any]:
    if name in _APPENDED:
        return list(parent) + list(child)
    by_key = {_key(name, e): e for e in child}
    result: list[Any] = []
    parent_keys = set()
    for entry in parent:
        key = _key(name, entry)
        parent_keys.add(key)
        if key in by_key:
            c = by_key[key]
            if isinstance(entry, Mapping) and isinstance(c, Mapping):
                result.append(_merge_object(entry, c))
            else:
                result.append(c)
        elif key not in drop:
            result.append(entry)
    result.extend(e for e in child if _key(name, e) not in parent_keys)
    return result
