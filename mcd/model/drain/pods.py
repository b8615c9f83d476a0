"""Which pods a drain evicts: what ``kubectl drain --ignore-daemonsets --delete-emptydir-data
--force`` would, as upstream's drain controller asks its drain helper.

* DaemonSet-managed pods stay (the DaemonSet would start them again at once);
* mirror pods (static pods the kubelet runs from files) stay: the API cannot remove them;
* finished pods (``Succeeded``, ``Failed``) need no eviction: they hold nothing;
* everything else is evicted, pods with ``emptyDir`` data (lost) and pods no controller will
  recreate included (kubectl's ``--delete-emptydir-data`` and ``--force``); both are named
  in the warnings, as kubectl names them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

MIRROR_ANNOTATION = "kubernetes.io/config.mirror"

Pod = Mapping[str, Any]


class Disposition(StrEnum):
    EVICT = "evict"
    DAEMONSET = "DaemonSet-managed"
    MIRROR = "mirror"
    FINISHED = "finished"


@dataclass(frozen=True)
class PodChoice:
    ref: str  # namespace/name
    disposition: Disposition
    local_storage: bool = False
    unmanaged: bool = False


def pod_ref(pod: Pod) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def classify(pod: Pod) -> PodChoice:
    meta = pod.get("metadata") or {}
    ref = pod_ref(pod)
    if MIRROR_ANNOTATION in (meta.get("annotations") or {}):
        return PodChoice(ref, Disposition.MIRROR)
    owners = [o for o in meta.get("ownerReferences") or [] if o.get("controller")]
    if any(o.get("kind") == "DaemonSet" for o in owners):
        return PodChoice(ref, Disposition.DAEMONSET)
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return PodChoice(ref, Disposition.FINISHED)
    volumes = (pod.get("spec") or {}).get("volumes") or []
    local = any("emptyDir" in (v or {}) for v in volumes)
    return PodChoice(ref, Disposition.EVICT, local_storage=local, unmanaged=not owners)


def evictable(pod: Pod) -> bool:
    return classify(pod).disposition is Disposition.EVICT


@dataclass(frozen=True)
class DrainList:
    """The pods of a node split into those to evict and those left, with kubectl's warnings."""

    evict: tuple[Pod, ...]
    choices: tuple[PodChoice, ...]

    def left(self) -> list[PodChoice]:
        return [c for c in self.choices if c.disposition is not Disposition.EVICT]

    def warnings(self) -> list[str]:
        """kubectl drain's warning lines (``ignoring DaemonSet-managed Pods: ns/a, ns/b``)."""

        def refs(wanted: Sequence[PodChoice]) -> str:
            return ", ".join(c.ref for c in wanted)

        lines = []
        evicted = [c for c in self.choices if c.disposition is Disposition.EVICT]
        groups = (
            ("ignoring DaemonSet-managed Pods", [c for c in self.left()
                                                 if c.disposition is Disposition.DAEMONSET]),
            ("not evicting finished Pods", [c for c in self.left()
                                            if c.disposition is Disposition.FINISHED]),
            ("deleting Pods with local storage", [c for c in evicted if c.local_storage]),
            ("deleting Pods that declare no controller", [c for c in evicted if c.unmanaged]),
        )  # fmt: skip
        for title, wanted in groups:
            if wanted:
                lines.append(f"{title}: {refs(wanted)}")
        return lines


def choose(pods: Sequence[Pod]) -> DrainList:
    choices = tuple(classify(p) for p in pods)
    evict = tuple(p for p, c in zip(pods, choices, strict=True)
                  if c.disposition is Disposition.EVICT)  # fmt: skip
    return DrainList(evict, choices)
