"""Ignition's rules for the storage sections mcd never writes (pure): ``disks``, ``raid``,
``filesystems``, ``luks``, ``directories`` and ``links`` (spec 3; Ignition's
``config/v3_*/types`` ``Validate`` methods and ``validate.ValidateDups``, in its words).

A running node never gets these sections (a change is unreconcilable unless the cluster
overrides it, and then only new nodes get it), but upstream parses every config with
Ignition, which refuses a malformed one; so does the gate.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Iterator
from typing import Any

from mcd.model.ignition.config import IgnitionConfig

RAID_LEVELS = frozenset(
    {"linear", "raid0", "0", "stripe", "raid1", "1", "mirror", "raid4", "4", "raid5", "5",
     "raid6", "6", "raid10", "10"}
)  # fmt: skip
STRIPED = frozenset({"linear", "raid0", "0", "stripe"})
FORMATS = frozenset({"ext4", "btrfs", "xfs", "swap", "vfat", "none"})
LABEL_LIMITS = {"ext4": 16, "btrfs": 256, "xfs": 12, "swap": 15, "vfat": 11}
GUID = re.compile(r"|[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}")
ZEROES_WITH_DELETE = (
    "shouldExist is false for a partition and other partition(s) has start or size 0"
)
GUID_PROBLEM = 'doesn\'t match the form "01234567-89AB-CDEF-EDCB-A98765432101"'


def path_problem(path: Any) -> str | None:
    """Ignition's ``validatePath``."""
    if not isinstance(path, str) or path == "":
        return "path not specified"
    if not path.startswith("/"):
        return "path not absolute"
    if posixpath.normpath(path) != path or path.startswith("//"):
        return "path is not fully simplified"
    return None


def _entries(cfg: IgnitionConfig, section: str) -> list[Any]:
    value = json.loads(getattr(cfg.fixed, section))
    return value if isinstance(value, list) else []


def _str(obj: dict[str, Any], key: str) -> str:
    value = obj.get(key)
    return value if isinstance(value, str) else ""


def problems(cfg: IgnitionConfig, prefix: str) -> Iterator[str]:
    if cfg.version.startswith("2."):
        return
    base = f"{prefix}.storage" if prefix else "storage"
    sections = {s: _entries(cfg, s) for s in ("disks", "raid", "filesystems", "luks")}
    sections["directories"] = _entries(cfg, "directories")
    sections["links"] = _entries(cfg, "links")
    checks = {"disks": _disk, "raid": _raid, "filesystems": _filesystem, "luks": _luks,
              "directories": _node, "links": _link}  # fmt: skip
    keys = {"disks": "device", "raid": "name", "filesystems": "device", "luks": "name"}
    nodes = {f.path for f in cfg.files}
    for section, entries in sections.items():
        seen: set[str] = set()
        for i, entry in enumerate(entries):
            fld = f"{base}.{section}[{i}]"
            if not isinstance(entry, dict):
                yield f"{fld}: expected an object"
                continue
            for sub, problem in checks[section](entry):
                yield f"{fld}{sub}: {problem}"
            key = _str(entry, keys.get(section, "path"))
            pool = nodes if section in ("directories", "links") else seen
            if key and key in pool:
                yield f"{fld}: duplicate entry defined"
            pool.add(key)


def _raid(r: dict[str, Any]) -> Iterator[tuple[str, str]]:
    level = _str(r, "level")
    if not level:
        yield ".level", "raid level is required"
    elif level not in RAID_LEVELS:
        yield ".level", "unrecognized raid level"
    elif level in STRIPED and r.get("spares"):
        yield ".level", "spares unsupported for linear and raid0 arrays"
    if not r.get("devices"):
        yield ".devices", "raid devices required"


def _disk(d: dict[str, Any]) -> Iterator[tuple[str, str]]:
    if not _str(d, "device"):
        yield ".device", "disk device is required"
        return
    bad = path_problem(d.get("device"))
    if bad:
        yield ".device", bad
    labels: set[str] = set()
    keys: set[str] = set()
    collided = False
    parts = d.get("partitions") if isinstance(d.get("partitions"), list) else []
    yield from _layout([p for p in parts or [] if isinstance(p, dict)])
    for j, part in enumerate(parts or []):
        at = f".partitions[{j}]"
        if not isinstance(part, dict):
            yield at, "expected an object"
            continue
        # Ignition's Partition.Validate: a label given, even empty, counts; number 0 is none
        label = part["label"] if isinstance(part.get("label"), str) else None
        number = _int(part, "number")
        if part.get("shouldExist") is False and (
            label is not None
            or any(_str(part, k) for k in ("typeGuid", "guid"))
            or any(part.get(k) is not None for k in ("startMiB", "sizeMiB"))
        ):
            yield at, "shouldExist specified false with other options also specified"
        if number == 0 and label is None:
            yield at, "a partition number >= 1 or a label must be specified"
        if label is not None and len(label) > 36:
            yield f"{at}.label", "partition labels may not exceed 36 characters"
        elif label is not None and ":" in label:
            yield f"{at}.label", "partition label will be truncated to text before the colon"
        for k in ("guid", "typeGuid"):
            if isinstance(part.get(k), str) and not GUID.fullmatch(part[k]):
                yield f"{at}.{k}", GUID_PROBLEM
        if label is not None and label in labels and not collided:
            collided = True  # Ignition names the first collision only
            yield at, "cannot use the same partition label twice"
        if label is not None:
            labels.add(label)
        key = f"number:{number}" if number else "" if label is None else f"label:{label}"
        if key in keys:
            yield at, "duplicate entry defined"
        keys.add(key)


def _layout(parts: list[dict[str, Any]]) -> Iterator[tuple[str, str]]:
    """Ignition's ``Disk.Validate`` over the partitions together: numbers, overlaps, and a
    partition to delete beside one placed by number 0."""
    numbers = [_int(p, "number") for p in parts]
    seconds = [j for j, n in enumerate(numbers) if n and n in numbers[:j]]
    if seconds:
        yield f".partitions[{seconds[0]}]", "partition numbers collide"
    spans = [
        (j, start, start + size - 1 if size else start)
        for j, p in enumerate(parts)
        if isinstance(start := p.get("startMiB"), int) and start
        and isinstance(size := p.get("sizeMiB"), int)
    ]  # fmt: skip
    overlap = next(
        (i for j, a, b in spans for i, c, d in spans
         if i != j and (c <= a <= d or c <= b <= d or (a < c and b > d))),
        None,
    )  # fmt: skip
    if overlap is not None:
        yield f".partitions[{overlap}]", "partitions overlap"
    if 0 in numbers and any(p.get("shouldExist") is False for p in parts):
        yield ".partitions", ZEROES_WITH_DELETE


def _int(obj: dict[str, Any], key: str) -> int:
    value = obj.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _filesystem(f: dict[str, Any]) -> Iterator[tuple[str, str]]:
    if f.get("path") not in (None, ""):
        bad = path_problem(f.get("path"))
        if bad:
            yield ".path", bad
    bad = path_problem(f.get("device"))
    if bad:
        yield ".device", bad
    fmt, label = _str(f, "format"), _str(f, "label")
    if not fmt:
        if any(f.get(k) for k in ("path", "label", "uuid", "wipeFilesystem", "mountOptions",
                                  "options")):  # fmt: skip
            yield ".format", ("format cannot be empty when path, label, uuid, wipeFilesystem, "
                              "options, or mountOptions is specified")  # fmt: skip
    elif fmt not in FORMATS:
        yield ".format", "invalid filesystem format"
    if label and not fmt:
        yield ".label", "filesystem must specify format if label is specified"
    elif label and fmt in LABEL_LIMITS and len(label) > LABEL_LIMITS[fmt]:
        yield ".label", (f"filesystem labels cannot be longer than {LABEL_LIMITS[fmt]} "
                         f"characters when using {fmt}")  # fmt: skip


def _luks(lk: dict[str, Any]) -> Iterator[tuple[str, str]]:
    if "/" in _str(lk, "name"):
        yield ".name", "device names cannot contain slashes"
    if len(_str(lk, "label")) > 47:
        yield ".label", "luks device labels cannot be longer than 47 characters"
    if not _str(lk, "device"):
        yield ".device", "disk device is required"
    else:
        bad = path_problem(lk.get("device"))
        if bad:
            yield ".device", bad


def _node(n: dict[str, Any]) -> Iterator[tuple[str, str]]:
    bad = path_problem(n.get("path"))
    if bad:
        yield ".path", bad


def _link(n: dict[str, Any]) -> Iterator[tuple[str, str]]:
    yield from _node(n)
    if not _str(n, "target"):
        yield ".target", "link target is required"
