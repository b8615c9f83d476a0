"""What a control-plane node reports of the release payloads its local registry holds
(``status.internalReleaseImage`` of its MachineConfigNode and the node condition
``InternalReleaseImageDegraded``), as upstream's InternalReleaseImage manager
(``pkg/daemon/internalreleaseimage``: ``refreshMachineConfigNodeStatus``,
``setMachineConfigNodeAsDegraded``, ``cleanupMachineConfigNodeStatus``) writes them. Pure: the
registry's answers come in, the new status fields go out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

Obj = dict[str, Any]

FIELD = "internalReleaseImage"
NODE_CONDITION = "InternalReleaseImageDegraded"
DEGRADED = "Degraded"
AVAILABLE = "Available"
UNREACHABLE = "RegistryUnreachable"
FOUND = "ReleaseImageAvailable"
NOT_FOUND = "ReleaseImageNotFound"


def condition(kind: str, status: bool, reason: str, message: str) -> Obj:
    return {"type": kind, "status": "True" if status else "False", "reason": reason,
            "message": message}  # fmt: skip


def set_condition(conditions: Sequence[Mapping[str, Any]], new: Obj, now: str) -> list[Obj]:
    """``meta.SetStatusCondition``: the condition of ``new``'s type replaced (its
    ``lastTransitionTime`` kept unless the status changes) or added."""
    out: list[Obj] = []
    found = False
    for c in conditions:
        if c.get("type") != new["type"]:
            out.append(dict(c))
            continue
        found = True
        same = c.get("status") == new["status"] and c.get("lastTransitionTime")
        out.append({**new, "lastTransitionTime": c["lastTransitionTime"] if same else now})
    if not found:
        out.append({**new, "lastTransitionTime": now})
    return out


def releases_of(status: Mapping[str, Any]) -> list[Obj]:
    return [dict(r) for r in (status.get(FIELD) or {}).get("releases") or []]


def new_bundles(status: Mapping[str, Any], bundles: Sequence[str]) -> list[str]:
    """The registry's bundles not yet in the status, in the registry's order."""
    known = {r.get("name") for r in releases_of(status)}
    return [b for b in bundles if b not in known]


def refreshed(
    status: Mapping[str, Any], added: Sequence[tuple[str, str]],
    missing: Mapping[str, str], now: str,
) -> Obj:  # fmt: skip
    """The status fields after a look at a reachable registry: ``added`` (bundle, image)
    appended, then each release ``Available`` unless ``missing`` names its image (with the
    registry's error), and the node ``InternalReleaseImageDegraded`` when any is missing."""
    releases = releases_of(status) + [{"name": n, "image": i} for n, i in added]
    for r in releases:
        error = missing.get(str(r.get("image") or ""))
        conditions = r.get("conditions") or []
        if error is None:
            pair = (
                condition(DEGRADED, False, FOUND, FOUND),
                condition(AVAILABLE, True, FOUND, "The specified release image is available"),
            )
        else:
            pair = (
                condition(DEGRADED, True, NOT_FOUND, error),
                condition(
                    AVAILABLE,
                    False,
                    NOT_FOUND,
                    "The specified release image was not found in the registry",
                ),
            )
        for c in pair:
            conditions = set_condition(conditions, c, now)
        r["conditions"] = conditions
    if missing:
        node = condition(NODE_CONDITION, True, NOT_FOUND,
                         "One or more release bundle are not available")  # fmt: skip
    else:
        node = condition(NODE_CONDITION, False, "AllReleasesAvailable",
                         "All the release images are available")  # fmt: skip
    return _fields(status, releases, node, now)


def unreachable(status: Mapping[str, Any], error: str, now: str) -> Obj:
    """The status fields when the local registry does not answer: the node
    ``InternalReleaseImageDegraded`` and every known release Degraded, not Available."""
    releases = releases_of(status)
    for r in releases:
        conditions = set_condition(r.get("conditions") or [], condition(
            DEGRADED, True, UNREACHABLE, error), now)  # fmt: skip
        r["conditions"] = set_condition(conditions, condition(
            AVAILABLE, False, UNREACHABLE,
            "Release bundle is unavailable: failed to reach the registry"), now)  # fmt: skip
    return _fields(status, releases, condition(NODE_CONDITION, True, UNREACHABLE, error), now)


def cleared(status: Mapping[str, Any]) -> Obj:
    """The InternalReleaseImage is gone and its registry stopped: the field and the node
    condition removed; nothing to write when no release was reported."""
    if not releases_of(status):
        return {}
    kept = [dict(c) for c in status.get("conditions") or [] if c.get("type") != NODE_CONDITION]
    return {FIELD: None, "conditions": kept}


def _fields(status: Mapping[str, Any], releases: list[Obj], node: Obj, now: str) -> Obj:
    """Only what differs from ``status`` (upstream writes nothing when nothing changed)."""
    fields: Obj = {}
    wanted = {"releases": releases} if releases else None
    if wanted != (status.get(FIELD) or None):
        fields[FIELD] = wanted
    conditions = set_condition(status.get("conditions") or [], node, now)
    if conditions != (status.get("conditions") or []):
        fields["conditions"] = conditions
    return fields
