"""Irreconcilable changes the cluster allows, and the ones a node reports (pure).

* :func:`overrides_from`: ``MachineConfiguration.spec.irreconcilableValidationOverrides``
  as the reconcilability rules take it (upstream ``isConfigReconcilable``: ``storage`` lists
  ``Disks``, ``FileSystems``, ``Raid``).
* :func:`irreconcilable_changes`: the MachineConfigNode's ``status.irreconcilableChanges``
  (upstream ``irreconcilable_diff_reporter.go``): the install-time config (the served
  ``/etc/mcs-machine-config-content.json``) against the target config, in the sections the
  daemon never writes (``storage.disks``, ``raid``, ``filesystems``, ``luks``, spec 3
  form), one entry
  per changed leaf: ``fieldPath`` (``spec.config.storage.disks[0].device``) and ``diff``
  (jd's rendering without its ``@`` path line: ``- old`` / ``+ new`` JSON lines, with jd's
  context lines around an array element added or removed).
"""

from __future__ import annotations

import json
from typing import Any

from mcd.model.machineconfig import MachineConfig
from mcd.model.planning.reconcile import Overrides, StorageOverrides

STORAGE_OVERRIDES = {"Disks": "disks", "FileSystems": "filesystems", "Raid": "raid"}
IRRECONCILABLE_SECTIONS = ("disks", "raid", "filesystems", "luks")
MAX_CHANGES = 32
MAX_PATH = 70
MAX_DIFF = 4096
"""The MachineConfigNode CRD's limits: 32 entries, a fieldPath of 70 characters, a diff of
4096."""


def overrides_from(machineconfiguration: object) -> Overrides:
    """The overrides of a ``MachineConfiguration`` object (none when absent or malformed:
    the API server's schema holds the enum, so an unknown value is only ignored)."""
    spec = machineconfiguration.get("spec") if isinstance(machineconfiguration, dict) else None
    found = (
        (spec or {}).get("irreconcilableValidationOverrides") if isinstance(spec, dict) else None
    )
    storage = found.get("storage") if isinstance(found, dict) else None
    names = {STORAGE_OVERRIDES[s] for s in storage or [] if s in STORAGE_OVERRIDES}
    if not isinstance(storage, list) or not names:
        return Overrides()
    return Overrides(storage=StorageOverrides(**dict.fromkeys(names, True)))


def _reduced(mc: MachineConfig) -> Any:
    """What upstream's ``patchDaemonManagedFields`` keeps: the storage sections the daemon
    never writes, in a MachineConfig of otherwise empty fields."""
    fixed = mc.ignition.fixed
    kept = {k: json.loads(getattr(fixed, k)) for k in IRRECONCILABLE_SECTIONS}
    kept = {k: v for k, v in kept.items() if v}
    return {"spec": {"config": {"storage": kept} if kept else {}}}


def irreconcilable_changes(base: MachineConfig, target: MachineConfig) -> list[dict[str, str]]:
    """``status.irreconcilableChanges`` of a node installed with ``base`` whose pool is on
    ``target``: at most :data:`MAX_CHANGES` entries (the CRD's limit), each path and diff
    within the CRD's lengths."""
    out: list[dict[str, str]] = []
    _diff(_reduced(base), _reduced(target), [], out)
    return out[:MAX_CHANGES]


def _field_path(path: list[str | int]) -> str:
    text = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)
    return text.lstrip(".[]")


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _emit(out: list[dict[str, str]], path: list[str | int], lines: list[str]) -> None:
    field_path = _field_path(path)
    while len(field_path) > MAX_PATH and len(path) > 1:  # the nearest parent that fits
        path = path[:-1]
        field_path = _field_path(path)
    diff = "\n".join(lines) + "\n"
    if len(diff) > MAX_DIFF:
        diff = diff[: MAX_DIFF - 4] + "...\n"
    if all(e["fieldPath"] != field_path for e in out):  # the CRD keys the list on fieldPath
        out.append({"fieldPath": field_path, "diff": diff})


def _diff(a: Any, b: Any, path: list[str | int], out: list[dict[str, str]]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if key not in b:
                _emit(out, [*path, key], [f"- {_json(a[key])}"])
            elif key not in a:
                _emit(out, [*path, key], [f"+ {_json(b[key])}"])
            else:
                _diff(a[key], b[key], [*path, key], out)
        return
    if isinstance(a, list) and isinstance(b, list):
        common = min(len(a), len(b))
        for i in range(common):
            _diff(a[i], b[i], [*path, i], out)
        if len(a) == len(b):
            return
        before = _json(b[common - 1]) if common else "["
        extra = a[common:] if len(a) > len(b) else b[common:]
        sign = "-" if len(a) > len(b) else "+"
        lines = [before if before == "[" else f"  {before}"]
        lines += [f"{sign} {_json(v)}" for v in extra]
        lines.append("]")
        _emit(out, [*path, common], lines)
        return
    if a != b or type(a) is not type(b):
        _emit(out, path, [f"- {_json(a)}", f"+ {_json(b)}"])
