"""PinnedImageSets on a node, as upstream's daemon handles them (``pkg/daemon/pinned_image_set.go``;
pure): the images a pool's sets name, the space check before pulling, CRI-O's drop-in that
pins them, the MachineConfigNode's ``status.pinnedImageSets`` and its two conditions, in
upstream's words."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from mcd.model.node.mcn import FALSE, PINNED_DEGRADED, PINNED_PROGRESSING, TRUE, Condition

Obj = dict[str, Any]

CRIO_DROPIN = "/etc/crio/crio.conf.d/50-pinned-images"
MIN_FREE_AFTER_PREFETCH = 16 * 2**30
"""``constants.MinFreeStorageAfterPrefetch``: 16Gi of the node's allocatable ephemeral storage."""
INSUFFICIENT_STORAGE = "storage available is less than minimum required"
FAILED_TO_PULL = "failed to pull image"
ALL_COMPLETE = "All pinned image sets complete"


@dataclass(frozen=True)
class ImageSet:
    """One PinnedImageSet: its name, uid, generation and images (trimmed, in order)."""

    name: str
    uid: str
    generation: int
    images: tuple[str, ...]


def image_set(obj: Mapping[str, Any]) -> ImageSet:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    images = tuple(
        str(ref.get("name", "")).strip()
        for ref in spec.get("pinnedImages") or []
        if isinstance(ref, Mapping)
    )
    return ImageSet(
        name=str(meta.get("name", "")),
        uid=str(meta.get("uid", "")),
        generation=int(meta.get("generation") or 1),
        images=tuple(i for i in images if i),
    )


def pool_set_names(pool: Mapping[str, Any]) -> list[str]:
    """``spec.pinnedImageSets[].name`` of a MachineConfigPool."""
    refs = (pool.get("spec") or {}).get("pinnedImageSets") or []
    return [str(r["name"]) for r in refs if isinstance(r, Mapping) and r.get("name")]


def unique_sorted(images: Iterable[str]) -> list[str]:
    """Upstream ``uniqueSortedImageNames``: each image once, blanks dropped, sorted."""
    return sorted({i.strip() for i in images if i.strip()})


def _toml_string(s: str) -> str:
    escaped = s.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + re.sub(r"[\x00-\x1f\x7f]", lambda m: f"\\u{ord(m.group()):04X}", escaped) + '"'


def crio_dropin(images: Iterable[str]) -> bytes:
    """``/etc/crio/crio.conf.d/50-pinned-images`` as upstream's ``createCrioConfigFileBytes``
    encodes it (BurntSushi/toml: nested tables indented by two spaces)."""
    listed = ", ".join(_toml_string(i) for i in images)
    return f"[crio]\n  [crio.image]\n    pinned_images = [{listed}]\n".encode()


_QUANTITY = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)$")
_SUFFIX = {
    "": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18,
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60, "m": 0.001,
}  # fmt: skip


def parse_quantity(text: str) -> int:
    """A Kubernetes quantity (``100Gi``, ``5e9``, ``500M``) in units; ``ValueError`` else."""
    match = _QUANTITY.match(text.strip())
    if not match or match.group(2) not in _SUFFIX:
        raise ValueError(text)
    return int(float(match.group(1)) * _SUFFIX[match.group(2)])


def node_problem(node: Mapping[str, Any], minimum: int = MIN_FREE_AFTER_PREFETCH) -> str | None:
    """Upstream ``checkNodeAllocatableStorage``: the node Ready, without disk pressure, with
    at least ``minimum`` bytes of allocatable ephemeral storage; the refusal, or None."""
    name = (node.get("metadata") or {}).get("name", "")
    status = node.get("status") or {}
    for cond in status.get("conditions") or []:
        if cond.get("type") == "Ready" and cond.get("status") != "True":
            return f"node {name} is reporting NotReady={cond.get('status')}"
        if cond.get("type") == "DiskPressure" and cond.get("status") != "False":
            return f"node {name} is reporting OutOfDisk={cond.get('status')}"
    raw = (status.get("allocatable") or {}).get("ephemeral-storage")
    if raw is None:
        return f'node "{name}" has no ephemeral storage capacity'
    try:
        capacity = parse_quantity(str(raw))
    except ValueError:
        return f'node "{name}" has no ephemeral storage capacity'
    if capacity < minimum:
        return f"{INSUFFICIENT_STORAGE} capacity: {capacity}, required: {minimum}"
    return None


def pull_failure(image: str, tries: int, error: str, *, no_space: bool) -> str:
    """Upstream ``ensurePullImage``'s error: after its retries, or at once when the disk is
    full (``no space left on device``)."""
    reason = error if no_space else "timed out waiting for the condition"
    return f'{FAILED_TO_PULL} "{image}" ({tries} tries): {reason}: {error}'


def is_no_space(error: str) -> bool:
    return "no space left on device" in error


def set_entries(sets: Iterable[ImageSet], done: Mapping[str, int], error: str | None) -> list[Obj]:
    """``status.pinnedImageSets`` (upstream ``createApplyConfigForImageSet``): each set's
    desired generation; the current one once pulled and pinned (``done``: uid ->
    generation), else the failed one with the error."""
    out = []
    for s in sets:
        entry: Obj = {"name": s.name, "desiredGeneration": s.generation}
        if done.get(s.uid) == s.generation:
            entry["currentGeneration"] = s.generation
        elif error is not None:
            entry["lastFailedGeneration"] = s.generation
            entry["lastFailedGenerationError"] = error[:32768]
        out.append(entry)
    return out


def progressing(node_name: str) -> Condition:
    return Condition(
        PINNED_PROGRESSING, "ImagePrefetch", f"node is prefetching images: {node_name}"
    )


def completed() -> tuple[Condition, Condition]:
    return (
        Condition(PINNED_PROGRESSING, "AsExpected", ALL_COMPLETE, FALSE),
        Condition(PINNED_DEGRADED, "AsExpected", "All is good", FALSE),
    )


def degraded() -> Condition:
    return Condition(
        PINNED_DEGRADED,
        "PrefetchFailed",
        "One or more PinnedImageSet is experiencing an error. See PinnedImageSet list for more "
        "details.",
        TRUE,
    )
