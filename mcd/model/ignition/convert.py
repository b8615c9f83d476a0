"""A spec 3.5 Ignition document (JSON) written down in an older spec version, for a client
that reads no newer one.

Upstream converts with ``ign-converter`` (``ctrlcommon.ConvertRawExtIgnitionToVersion``:
3.5 -> 3.4 -> 3.3 -> 3.2 -> 3.1, and 3.2 -> 2.2). Each step refuses a document that uses
a field the older spec lacks rather than drop it (a node must never boot with half its
config), and so does this module, step for step:

* below 3.5: ``luks[].cex`` (``v35tov34``);
* below 3.4: Tang ``advertisement``, LUKS ``discard`` and ``openOptions``, special mode bits
  (setuid, setgid, sticky) on files and directories, ``arn:`` sources (``v34tov33``);
* below 3.3: ``kernelArguments`` (move them into the MachineConfig first:
  :func:`migrate_kernel_arguments`, upstream ``MigrateKernelArgsIfNecessary``);
* below 3.2: ``storage.luks``, partition ``resize``, user and group ``shouldExist``;
* below 3.1 (mcd only; upstream cannot serve 3.0): ``httpHeaders``, ``ignition.proxy``,
  compression of a config or CA source, ``sha256-`` verification;
* 2.2 (``v32tov22``): files, directories and links gain ``filesystem: "root"``; a file's
  single ``append`` entry becomes ``append: true``; ``ignition.config.merge`` becomes
  ``append``. LUKS, partition ``resize`` and a user's or group's ``shouldExist: false`` are
  refused (as upstream does), and so are disks, RAID and filesystems (mcd does not write
  their 2.2 form).

The input is never changed.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

from mcd.model.errors import ConfigError
from mcd.model.ignition.accept import Version, parse_version

JSONObj = dict[str, Any]

V3_3 = Version(3, 3, 0)


class ConversionError(ConfigError):
    """The document uses something the requested spec version cannot say."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)


def _walk(node: Any) -> Iterator[tuple[str, Any]]:
    """Every (member name, value) pair of every object in ``node``, depth first."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, value in item.items():
                yield key, value
                stack.append(value)
        elif isinstance(item, list):
            stack.extend(item)


def _storage(doc: JSONObj, key: str) -> list[Any]:
    return list((doc.get("storage") or {}).get(key) or [])


def _sources(doc: JSONObj) -> Iterator[JSONObj]:
    """Every resource (an object with a ``source``)."""
    for _, value in _walk(doc):
        if isinstance(value, dict) and isinstance(value.get("source"), str):
            yield value
        elif isinstance(value, list):
            yield from (
                v for v in value if isinstance(v, dict) and isinstance(v.get("source"), str)
            )


def _refuse(version: str, what: str) -> ConversionError:
    return ConversionError(f"invalid input config: {what} is not supported in spec v{version}")


def _check_below_3_5(doc: JSONObj, target: str) -> None:
    if any((luks or {}).get("cex") for luks in _storage(doc, "luks")):
        raise _refuse(target, "'Cex' type")


def _check_below_3_4(doc: JSONObj, target: str) -> None:
    for entry in _storage(doc, "luks"):
        luks = entry or {}
        if luks.get("discard") is True:
            raise _refuse(target, "luks discard")
        if luks.get("openOptions"):
            raise _refuse(target, "luks openOptions")
        for tang in (luks.get("clevis") or {}).get("tang") or []:
            if (tang or {}).get("advertisement"):
                raise _refuse(target, "tang offline provisioning")
    for key in ("files", "directories"):
        for entry in _storage(doc, key):
            mode = (entry or {}).get("mode")
            if isinstance(mode, int) and mode & 0o7000:
                raise _refuse(target, "special mode bits")
    for resource in _sources(doc):
        if resource["source"].startswith("arn:"):
            raise _refuse(target, "arn: scheme for s3")


def _check_below_3_3(doc: JSONObj, target: str) -> None:
    kargs = doc.get("kernelArguments") or {}
    if kargs.get("shouldExist") or kargs.get("shouldNotExist"):
        raise _refuse(target, "kernelArguments")


def _check_below_3_2(doc: JSONObj, target: str) -> None:
    if _storage(doc, "luks"):
        raise _refuse(target, "luks")
    for disk in _storage(doc, "disks"):
        if any((p or {}).get("resize") for p in (disk or {}).get("partitions") or []):
            raise _refuse(target, "partition resize")
    passwd = doc.get("passwd") or {}
    for key in ("users", "groups"):
        if any((e or {}).get("shouldExist") is not None for e in passwd.get(key) or []):
            raise _refuse(target, f"{key} shouldExist")


def _check_below_3_1(doc: JSONObj, target: str) -> None:
    if any(key == "httpHeaders" and value for key, value in _walk(doc)):
        raise _refuse(target, "httpHeaders")
    ignition = doc.get("ignition") or {}
    if ignition.get("proxy"):
        raise _refuse(target, "proxy")
    config = ignition.get("config") or {}
    tls = (ignition.get("security") or {}).get("tls") or {}
    for resource in [
        *(config.get("merge") or []),
        config.get("replace") or {},
        *(tls.get("certificateAuthorities") or []),
    ]:
        if (resource or {}).get("compression"):
            raise _refuse(target, "compression of a config or CA")
    for key, value in _walk(doc):
        if key == "hash" and isinstance(value, str) and value.startswith("sha256-"):
            raise _refuse(target, "sha256 verification")


def _to_v22(doc: JSONObj) -> JSONObj:
    for key in ("disks", "raid", "filesystems"):
        if _storage(doc, key):
            raise _refuse("2.2", f"storage.{key} (mcd serves them in spec 3 only)")
    storage = doc.get("storage") or {}
    for key in ("files", "directories", "links"):
        for entry in storage.get(key) or []:
            entry["filesystem"] = "root"
    for entry in storage.get("files") or []:
        appended = entry.pop("append", None) or []
        if not appended:
            continue
        if len(appended) > 1 or (entry.get("contents") or {}).get("source"):
            raise _refuse("2.2", f"more than one contents for file {entry.get('path')!r}")
        entry["contents"] = appended[0]
        entry["append"] = True
    config = (doc.get("ignition") or {}).get("config") or {}
    if "merge" in config:
        config["append"] = config.pop("merge")
    doc.pop("kernelArguments", None)
    return doc


def to_version(doc: JSONObj, version: str) -> JSONObj:
    """A copy of spec 3.5 ``doc`` in spec ``version`` (one of ``accept.SERVED_MINORS``)."""
    target = parse_version(version)
    if target is None or (target.major, target.minor) not in {(2, 2), *((3, m) for m in range(6))}:
        raise ConversionError(f"cannot convert to spec version {version!r}")
    out = copy.deepcopy(doc)
    short = f"{target.major}.{target.minor}"
    if target.major == 2:
        short = "3.2"  # upstream goes down to 3.2, then across to 2.2
    checks = (
        (Version(3, 5, 0), _check_below_3_5),
        (Version(3, 4, 0), _check_below_3_4),
        (V3_3, _check_below_3_3),
        (Version(3, 2, 0), _check_below_3_2),
    )
    ceiling = Version(3, 2, 0) if target.major == 2 else target
    for floor, check in checks:
        if ceiling.below(floor):
            check(out, short if target.major == 3 else "2.2")
    if target.major == 3 and target.minor == 0:
        _check_below_3_1(out, "3.0")
    if target.major == 2:
        _check_v22_resources(out)
        _to_v22(out)
    elif ceiling.below(V3_3):
        out.pop("kernelArguments", None)
    out.setdefault("ignition", {})["version"] = version
    return out


def _check_v22_resources(doc: JSONObj) -> None:
    if any(key == "httpHeaders" and value for key, value in _walk(doc)):
        raise _refuse("2.2", "httpHeaders")
    if (doc.get("ignition") or {}).get("proxy"):
        raise _refuse("2.2", "proxy")
    # v32tov22 itself: 2.2 has no LUKS, no partition resize, and cannot delete a user or group
    if _storage(doc, "luks"):
        raise _refuse("2.2", "luks")
    for disk in _storage(doc, "disks"):
        if any((p or {}).get("resize") for p in (disk or {}).get("partitions") or []):
            raise _refuse("2.2", "partition resize")
    passwd = doc.get("passwd") or {}
    for key in ("users", "groups"):
        if any((e or {}).get("shouldExist") is False for e in passwd.get(key) or []):
            raise _refuse("2.2", f"{key} shouldExist")


def migrate_kernel_arguments(doc: JSONObj, mc_spec: JSONObj, version: str) -> None:
    """Below spec 3.3, move Ignition's ``kernelArguments.shouldExist`` into the MachineConfig's
    ``spec.kernelArguments`` (so the first boot still sets them) and drop the section; a
    ``shouldNotExist`` has nowhere to go and is refused (upstream
    ``MigrateKernelArgsIfNecessary``). Changes both arguments in place."""
    target = parse_version(version)
    if target is None or not target.below(V3_3):
        return
    kargs = doc.get("kernelArguments") or {}
    if kargs.get("shouldNotExist"):
        raise ConversionError(
            f"can't serve version {version} with ignition KernelArguments.ShouldNotExist populated"
        )
    should = [str(k) for k in kargs.get("shouldExist") or []]
    if should:
        mc_spec["kernelArguments"] = [*(mc_spec.get("kernelArguments") or []), *should]
    doc.pop("kernelArguments", None)
