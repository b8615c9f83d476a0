"""A pool's ``status.poolSynchronizersStatus`` (upstream's node controller ``poolSynchronizer``,
``pkg/controller/node/status.go``): for the ``PinnedImageSets`` synchronizer, the pool's
machine count, how many members have pulled and pinned every set (their MachineConfigNode's
``status.pinnedImageSets``, written by :mod:`mcd.agent.pinning`), and the pool's ready,
unavailable and available counts.

Written only for a pool whose ``spec.pinnedImageSets`` names a set (a pool that stops naming
any loses the field), so a cluster that pins nothing never lists MachineConfigNodes. Stricter
than upstream, which counts a node whose MachineConfigNode lists no set yet as updated: a
member counts once its MachineConfigNode lists each set the pool names at its desired
generation. The MachineConfigNodes are listed at most every ``FRESH`` seconds; when they
cannot be read the field is left as it is.

The pool's ``spec.pinnedImageSets`` and its ``PinnedImageSetsDegraded`` condition are
upstream's pinned image set controller's (``pkg/controller/pinnedimageset``), written first
(:mod:`mcd.controller.pinnedsets`). Upstream's node controller would also roll the
MachineConfigNodes' ``PinnedImageSetsDegraded`` up, but that code is commented out there
(OCPBUGS-57177), so a node's failed pull stays on its MachineConfigNode, as upstream. Like
upstream, the condition does not make the pool Degraded."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from mcd.cluster.api import ApiError, Obj
from mcd.cluster.mcn import COLLECTION as MCN_COLLECTION
from mcd.cluster.pools import PoolWriter
from mcd.controller.pinnedsets import PoolPinnedSets
from mcd.model.node.pinned import pool_set_names
from mcd.model.pool.rollout import set_condition

log = logging.getLogger(__name__)

PINNED_IMAGE_SETS = "PinnedImageSets"
FIELD = "poolSynchronizersStatus"
FRESH = 5.0
"""Seconds a listing of MachineConfigNodes is used before listing again."""
DEGRADED = "PinnedImageSetsDegraded"


def pinned_everywhere(sets: Sequence[str], mcn: Mapping[str, Any] | None) -> bool:
    """Every set in ``sets`` is pinned at its desired generation on this MachineConfigNode."""
    entries = ((mcn or {}).get("status") or {}).get("pinnedImageSets") or []
    done = {
        e.get("name")
        for e in entries
        if isinstance(e, dict)
        and (e.get("desiredGeneration") or 0) > 0
        and e.get("currentGeneration") == e.get("desiredGeneration")
    }
    return all(name in done for name in sets)


def synchronizer_status(
    sets: Sequence[str], members: Sequence[str], mcns: Mapping[str, Obj], status: Mapping[str, Any]
) -> list[Obj]:
    """The ``poolSynchronizersStatus`` list for a pool naming ``sets`` (upstream's fields; the
    ready and unavailable counts are the pool's own, ``available`` what is not unavailable)."""
    machines = len(members)
    unavailable = min(int(status.get("unavailableMachineCount") or 0), machines)
    available = machines - unavailable
    ready = min(int(status.get("readyMachineCount") or 0), available)
    updated = sum(pinned_everywhere(sets, mcns.get(m)) for m in members)
    return [
        {
            "poolSynchronizerType": PINNED_IMAGE_SETS,
            "machineCount": machines,
            "updatedMachineCount": updated,
            "readyMachineCount": ready,
            "unavailableMachineCount": unavailable,
            "availableMachineCount": available,
        }
    ]


@dataclass
class PinnedRollup:
    """Called once per pool per pass with the status about to be written; returns it with
    ``poolSynchronizersStatus`` set (or ``None``: removed by the merge patch)."""

    clock: Callable[[], float] = time.monotonic
    wall: Callable[[], datetime] = lambda: datetime.now(UTC)
    pool_sets: PoolPinnedSets = field(default_factory=PoolPinnedSets)
    _listed: tuple[float, dict[str, Obj]] | None = None

    def __call__(
        self,
        writer: PoolWriter,
        pool: Obj,
        members: Sequence[Mapping[str, Any]],
        status: Obj,
        observe: Callable[[Obj], None] = lambda _o: None,
    ) -> Obj:
        pool, verdict = self.pool_sets(writer, pool, observe)
        sets = pool_set_names(pool)
        stamp = self.wall().strftime("%Y-%m-%dT%H:%M:%SZ")
        if verdict is not None:
            status = self._degraded(status, verdict, stamp)
        if not sets:
            had = (pool.get("status") or {}).get(FIELD)
            return {**status, FIELD: None} if had else status
        try:
            mcns = self._mcns(writer)
        except ApiError as e:
            log.warning("Cannot list MachineConfigNodes for %s: %s", FIELD, e)
            return status
        names = [str((m.get("metadata") or {}).get("name") or "") for m in members]
        return {**status, FIELD: synchronizer_status(sets, names, mcns, status)}

    @staticmethod
    def _degraded(status: Obj, message: str, stamp: str) -> Obj:
        conditions = [dict(c) for c in status.get("conditions") or []]
        set_condition(conditions, DEGRADED, bool(message), "", message, stamp)
        return {**status, "conditions": conditions}

    def _mcns(self, writer: PoolWriter) -> dict[str, Obj]:
        now = self.clock()
        if self._listed is not None and now - self._listed[0] < FRESH:
            return self._listed[1]
        try:
            items = writer.kube.request("GET", MCN_COLLECTION).get("items") or []
        except ApiError as e:
            if e.status != 404:
                raise
            items = []  # no MachineConfigNode API: no node has pinned anything
        found = {str((m.get("metadata") or {}).get("name") or ""): m for m in items}
        self._listed = (now, found)
        return found
