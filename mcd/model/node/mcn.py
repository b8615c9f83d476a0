"""MachineConfigNode (``machineconfiguration.openshift.io/v1``) status, as upstream's
``pkg/upgrademonitor`` computes it: a parent phase condition and an optional child, the other
conditions defaulted to ``NotYetOccurred`` on first report, reset to False when the node
reaches ``Updated``, and the config versions in status. Pure: the caller passes the time."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

Obj = dict[str, Any]

NOT_YET_SET = "not-yet-set"

UPDATE_PREPARED = "UpdatePrepared"
UPDATE_EXECUTED = "UpdateExecuted"
UPDATE_POST_ACTION_COMPLETE = "UpdatePostActionComplete"
UPDATE_COMPLETE = "UpdateComplete"
UPDATED = "Updated"
RESUMED = "Resumed"
DRAINED = "Drained"
FILES_AND_OS = "AppliedFilesAndOS"
CORDONED = "Cordoned"
UNCORDONED = "Uncordoned"
REBOOTED = "RebootedNode"
NODE_DEGRADED = "NodeDegraded"
PINNED_DEGRADED = "PinnedImageSetsDegraded"
PINNED_PROGRESSING = "PinnedImageSetsProgressing"

ALL_CONDITIONS = (
    UPDATE_PREPARED,
    UPDATE_EXECUTED,
    UPDATE_POST_ACTION_COMPLETE,
    UPDATE_COMPLETE,
    RESUMED,
    DRAINED,
    FILES_AND_OS,
    CORDONED,
    REBOOTED,
    UPDATED,
    UNCORDONED,
    NODE_DEGRADED,
    PINNED_DEGRADED,
    PINNED_PROGRESSING,
)
"""Upstream's order (ImageModeStatusReporting off), singletons last."""
FILES = "AppliedFiles"
OS_IMAGE = "AppliedOSImage"
IMAGE_PULLED = "ImagePulledFromRegistry"
IMAGE_MODE_CONDITIONS = (
    UPDATE_PREPARED,
    UPDATE_EXECUTED,
    UPDATE_POST_ACTION_COMPLETE,
    UPDATE_COMPLETE,
    RESUMED,
    DRAINED,
    FILES,
    OS_IMAGE,
    CORDONED,
    REBOOTED,
    UPDATED,
    UNCORDONED,
    IMAGE_PULLED,
    NODE_DEGRADED,
    PINNED_DEGRADED,
    PINNED_PROGRESSING,
)
"""Upstream's order with ImageModeStatusReporting (an image-mode node here): AppliedFiles and
AppliedOSImage replace AppliedFilesAndOS, ImagePulledFromRegistry is added."""
REBOOT_REQUIRED = "RebootRequired"
"""Beyond upstream: the node's OS asks for a reboot (:mod:`mcd.model.reboots`)."""
SINGLETONS = frozenset({PINNED_DEGRADED, PINNED_PROGRESSING, REBOOT_REQUIRED})

TRUE, FALSE, UNKNOWN = "True", "False", "Unknown"


@dataclass(frozen=True)
class Condition:
    type: str
    reason: str
    message: str
    status: str = TRUE

    def at(self, now: str) -> Obj:
        return {
            "type": self.type,
            "status": self.status,
            "reason": self.reason,
            "message": self.message,
            "lastTransitionTime": now,
        }


def phase(parent: str, message: str, status: str = TRUE, reason: str = "") -> Condition:
    """A parent condition: the reason is the phase unless upstream names the child."""
    return Condition(parent, reason or parent, message, status)


def child(parent: str, kind: str, message: str, status: str = TRUE) -> Condition:
    """A child condition: upstream's reason is the parent's name then the child's."""
    return Condition(kind, f"{parent}{kind}", message, status)


def next_status(
    old: Obj | None,
    parent: Condition,
    sub: Condition | None,
    *,
    desired_spec: str,
    desired_annotation: str,
    current_annotation: str,
    now: str,
    image_mode: bool = False,
    images: tuple[str, str] = ("", ""),
) -> Obj | None:
    """The new ``status`` of a MachineConfigNode after reporting ``parent`` (and ``sub``), or
    ``None`` when the parent is already reported with that status and message (upstream: no
    write). ``old`` is the current status (``None``/empty on first report). ``image_mode``:
    the node is on (or moving to) a built image: upstream's ImageModeStatusReporting
    conditions, and ``configImage`` from ``images`` (current, desired annotations)."""
    conditions = [dict(c) for c in ((old or {}).get("conditions") or [])]
    new_parent = parent.at(now)
    new_child = sub.at(now) if sub is not None else None
    if not conditions:
        conditions = [new_parent] + ([new_child] if new_child else [])
        have = {c["type"] for c in conditions}
        conditions += [
            {
                "type": t,
                "status": FALSE,
                "reason": "NotYetOccurred",
                "message": f"This node has not yet entered the {t} phase",
                "lastTransitionTime": now,
            }
            for t in (IMAGE_MODE_CONDITIONS if image_mode else ALL_CONDITIONS)
            if t not in have
        ]
    else:
        reset = parent.type == UPDATED
        found_parent = found_child = False
        for i, c in enumerate(conditions):
            if (
                c["type"] == UPDATED
                and c.get("status") == TRUE
                and parent.type != UPDATED
                and parent.type not in SINGLETONS  # pinned images are no update of the node
            ):
                conditions[i] = {
                    "type": UPDATED,
                    "status": FALSE,
                    "reason": UPDATED,
                    "message": "This node is not updated, sensed disruption via a manual update.",
                    "lastTransitionTime": now,
                }
            elif new_child is not None and c["type"] == new_child["type"]:
                found_child = True
                conditions[i] = new_child
            elif c["type"] == parent.type:
                found_parent = True
                unchanged = c.get("status") == parent.status and c.get("message") == parent.message
                if unchanged and parent.type not in SINGLETONS:
                    return None
                conditions[i] = new_parent
            elif reset and c.get("status") != FALSE:
                conditions[i] = {
                    **c,
                    "status": FALSE,
                    "lastTransitionTime": now,
                    "message": f"Action during update to {desired_spec}: {c.get('message', '')}",
                }
        if new_child is not None and not found_child:
            conditions.append(new_child)
        if not found_parent:
            conditions.append(new_parent)
    prepared_true = parent.type == UPDATE_PREPARED and parent.status == TRUE
    desired = NOT_YET_SET
    if (prepared_true or parent.type != UPDATE_PREPARED) and desired_annotation:
        desired = desired_annotation
    version: Obj = {"desired": desired}
    if current_annotation:
        version["current"] = current_annotation
    status: Obj = {"conditions": conditions, "configVersion": version}
    image = config_image(*images) if image_mode else None
    if image:
        status["configImage"] = image
    return status


_DIGESTED = re.compile(
    r"([a-zA-Z0-9-]+\.)+[a-zA-Z0-9-]+(:[0-9]{2,5})?/([a-zA-Z0-9-_]{0,61}/)?[a-zA-Z0-9-_.]*?"
    r"@sha256:[a-f0-9]{64}"
)


def image_reference_ok(image: str) -> bool:
    """The CRD's rule for an image in ``configImage`` (a digested pull spec of at most 447
    characters): anything else would make the API server refuse the whole status write."""
    return len(image) <= 447 and _DIGESTED.fullmatch(image) is not None


def config_image(current: str, desired: str) -> Obj | None:
    """``status.configImage`` (upstream: from the node's currentImage and desiredImage
    annotations, each only when set and, here, only when the CRD takes it); None when
    neither is."""
    pairs = (("currentImage", current), ("desiredImage", desired))
    found = {k: v for k, v in pairs if v and image_reference_ok(v)}
    return found or None


def pool_of(labels: dict[str, str]) -> str:
    """The node's pool as upstream names it for the MachineConfigNode: master for a control
    plane node, else a custom role, else worker."""
    roles = sorted(k.rsplit("/", 1)[1] for k in labels if k.startswith("node-role.kubernetes.io/"))
    if "master" in roles or "control-plane" in roles:
        return "master"
    custom = [r for r in roles if r != "worker"]
    return custom[0] if custom else "worker"
