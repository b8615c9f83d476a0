"""The status an object's sync leaves (upstream ``syncStatusOnly`` of both controllers).

KubeletConfig: an ``Accepted`` condition (``True`` with ``Success``, ``False`` with the
refusal), the last three of them kept, followed by the deprecated ``Success`` / ``Failure``
condition upstream still appends for older readers. ContainerRuntimeConfig: a ``Success`` or
``Failure`` condition (status ``True``) appended when its message is new. Both set
``observedGeneration``. A sync whose outcome is the one already recorded writes nothing (upstream
only refreshes the last condition's time), so a status write never wakes another."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Obj = dict[str, Any]
ACCEPTED = "Accepted"
SUCCESS = "Success"
FAILURE = "Failure"
KEPT = 3


def _cond(kind: str, status: str, message: str, stamp: str) -> Obj:
    return {"type": kind, "status": status, "lastTransitionTime": stamp, "message": message}


def _generation(obj: Mapping[str, Any]) -> int:
    return int((obj.get("metadata") or {}).get("generation") or 0)


def kubelet_status(obj: Mapping[str, Any], error: str | None, stamp: str) -> Obj | None:
    """The KubeletConfig's new status for a sync that ended in ``error`` (the condition
    message; None: success), or None when it already says so."""
    status = dict(obj.get("status") or {})
    kept = [c for c in status.get("conditions") or [] if c.get("type") not in (SUCCESS, FAILURE)]
    new = _cond(ACCEPTED, "False" if error else "True", error or SUCCESS, stamp)
    last = kept[-1] if kept else None
    same = last is not None and (last.get("status"), last.get("message")) == (
        new["status"], new["message"])  # fmt: skip
    if same and status.get("observedGeneration") == _generation(obj):
        return None
    if same and last is not None:
        last["lastTransitionTime"] = stamp
    else:
        kept.append(new)
    kept = kept[-KEPT:]
    legacy = _cond(FAILURE if error else SUCCESS, "True", new["message"], stamp)
    return {**status, "observedGeneration": _generation(obj), "conditions": [*kept, legacy]}


def runtime_status(obj: Mapping[str, Any], error: str | None, stamp: str) -> Obj | None:
    """The ContainerRuntimeConfig's new status, or None when it already says so."""
    status = dict(obj.get("status") or {})
    conditions = list(status.get("conditions") or [])
    new = _cond(FAILURE if error else SUCCESS, "True", error or SUCCESS, stamp)
    last = conditions[-1] if conditions else None
    same = last is not None and last.get("message") == new["message"]
    if (
        same
        and last is not None
        and last.get("type") == new["type"]
        and (status.get("observedGeneration") == _generation(obj))
    ):
        return None
    if same:
        conditions[-1] = new
    else:
        conditions.append(new)
    return {**status, "observedGeneration": _generation(obj), "conditions": conditions}


def last_message(obj: Mapping[str, Any]) -> str:
    """The newest condition's message ('' before the first sync)."""
    conditions = (obj.get("status") or {}).get("conditions") or []
    return str(conditions[-1].get("message") or "") if conditions else ""
