"""A pool's ``spec.pinnedImageSets`` from the PinnedImageSets its ``machineConfigSelector``
selects (upstream's pinned image set controller, ``pkg/controller/pinnedimageset``,
``syncMachineConfigPool`` and ``syncPinnedImageSets``).

Per pool and pass: the PinnedImageSets whose labels the pool's ``machineConfigSelector``
matches (on OpenShift ``machineconfiguration.openshift.io/role: worker`` for the worker
pool), sorted by name, become the pool's ``spec.pinnedImageSets``, replacing the list
(a set that no longer matches, or one named by hand, is dropped; no set: the field is
removed). A pool whose selector is exactly ``{}`` is skipped (upstream: "everything" is not
populated); a pool without one selects no set. The pool's ``PinnedImageSetsDegraded`` is
False (no reason, no message) once the list is written or already right, and True,
``Failed to populate pinned image sets for pool <pool>: <error>``, when the write fails.

Where upstream writes the pool on every sync, mcd writes only when the list differs. The
PinnedImageSets are listed at most every ``FRESH`` seconds (upstream waits 5 s after a
change before syncing, "to avoid churn"). Without the PinnedImageSet API (plain Kubernetes
without its CRD) nothing is done and no condition is set."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from mcd.cluster.api import ApiError, Obj
from mcd.model.pool.pools import SelectorError, labels_of, name_of, selector_matches

log = logging.getLogger(__name__)

FRESH = 5.0
"""Seconds a listing of the PinnedImageSets is used before listing again."""


class SetsWriter(Protocol):
    def pinned_image_sets(self) -> list[Obj] | None: ...

    def set_pinned_image_sets(self, pool: str, refs: list[Obj] | None) -> Obj: ...


def selected_sets(pool: Mapping[str, Any], sets: Iterable[Mapping[str, Any]]) -> list[str] | None:
    """The names of the sets the pool's ``machineConfigSelector`` selects, sorted; None for
    a pool upstream skips (selector exactly ``{}``). Raises SelectorError for a selector
    that cannot be read."""
    selector = (pool.get("spec") or {}).get("machineConfigSelector")
    if selector is not None and not isinstance(selector, Mapping):
        raise SelectorError("machineConfigSelector is not an object")
    if selector is not None and not selector:
        return None
    chosen = {name_of(s) for s in sets if selector_matches(selector, labels_of(s))}
    return sorted(n for n in chosen if n)


def failure_message(pool: str, error: ApiError) -> str:
    """Upstream ``syncFailingStatus``'s text (the error as the API server words it)."""
    return f"Failed to populate pinned image sets for pool {pool}: {error.message or error}"


@dataclass
class PoolPinnedSets:
    """Called once per pool per pass: returns the pool (as written when its list changed) and
    the ``PinnedImageSetsDegraded`` verdict: None (leave the condition as it is), '' (False)
    or the failure message (True)."""

    clock: Callable[[], float] = time.monotonic
    _listed: tuple[float, list[Obj] | None] | None = None
    _listings: int = 0
    _chosen: dict[str, tuple[int, str, list[str] | None]] = field(default_factory=dict)
    """Pool -> (listing, its selector, the names chosen): a pass between two listings
    matches no label again."""

    def __call__(
        self, writer: SetsWriter, pool: Obj, observe: Callable[[Obj], None]
    ) -> tuple[Obj, str | None]:
        name = name_of(pool)
        try:
            sets = self._sets(writer)
        except ApiError as e:
            log.warning("Cannot list PinnedImageSets: %s", e)
            return pool, None
        if sets is None:
            return pool, None
        selector = repr((pool.get("spec") or {}).get("machineConfigSelector"))
        cached = self._chosen.get(name)
        if cached is not None and cached[:2] == (self._listings, selector):
            names = cached[2]
        else:
            try:
                names = selected_sets(pool, sets)
            except (SelectorError, AttributeError, TypeError) as e:
                log.warning("Pool %s: invalid label selector: %s", name, e)
                return pool, None
            self._chosen[name] = (self._listings, selector, names)
        if names is None:
            return pool, None
        refs = (pool.get("spec") or {}).get("pinnedImageSets") or []
        current = [r.get("name") if isinstance(r, Mapping) else r for r in refs]
        if current == names:
            return pool, ""
        try:
            written = writer.set_pinned_image_sets(name, [{"name": n} for n in names] or None)
        except ApiError as e:
            log.warning("Pool %s: cannot write spec.pinnedImageSets: %s", name, e)
            return pool, failure_message(name, e)
        log.info("Pool %s: pinned image sets %s", name, ", ".join(names) or "(none)")
        observe(written)
        return written, ""

    def _sets(self, writer: SetsWriter) -> list[Obj] | None:
        now = self.clock()
        if self._listed is not None and now - self._listed[0] < FRESH:
            return self._listed[1]
        found = writer.pinned_image_sets()
        self._listed = (now, found)
        self._listings += 1
        self._chosen.clear()
        return found
