"""Exactly one controller paces a pool, whatever its flags and wherever it runs (beyond
upstream, whose one controller is the operator's).

Leader election keeps the replicas of *one* Lease from acting together; two controllers
holding different Leases (a Deployment's ``mcd/mcd-controller`` and a laptop's, started with
another ``--namespace``) would both be leaders. So the leader records its Lease,
``NAMESPACE/NAME``, on each pool it paces (:data:`PACER_ANNOTATION`), and a controller
holding another Lease never writes that pool (nor its nodes, drains or rendered configs): it
logs one line and records a Warning Event ``PacedElsewhere`` on the pool naming the other
Lease and how to hand the pool over.

* A pool with no record is claimed by the first leader that writes the record, with the
  pool's resourceVersion as a precondition: of two racing, exactly one wins (the other's
  write is refused with 409 and it does not write the pool).
* The replicas of one Lease share the record: a new leader of the same Lease carries on.
* A hand-over is deliberate, never automatic: ``--take-over-from NAMESPACE/NAME`` takes the
  pools recorded for that Lease once it is no longer held (released, gone, or unchanged for
  its ``leaseDurationSeconds`` as this process saw it: :class:`mcd.cluster.lease.Observation`);
  while it is held, the pools stay its. Or remove the record (``kubectl annotate
  machineconfigpool POOL mcd-project.github.io/pacer-``) once the other controller is stopped:
  the next leader to see the pool claims it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Mapping
from typing import Any

from mcd.cluster.api import MERGE_PATCH, ApiError, Kube, Obj
from mcd.cluster.lease import Observation, leases_path
from mcd.cluster.pools import POOLS, PoolWriter
from mcd.model.pool.history import belongs
from mcd.model.pool.pools import name_of

log = logging.getLogger(__name__)

PACER_ANNOTATION = "mcd-project.github.io/pacer"
REFUSED_REASON = "PacedElsewhere"
TAKEN_REASON = "PacerRecorded"
LOOK_EVERY = 1.0
"""Seconds between two reads of the same other Lease (for ``--take-over-from``)."""


def annotations_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("annotations") or {}


class Pacer:
    """Which pools this controller paces (:meth:`sort`, once a pass, before anything is
    written), claiming the unrecorded ones."""

    def __init__(
        self,
        kube: Kube,
        writer: PoolWriter,
        lease: str,
        take_over_from: Collection[str] = (),
        observe_pool: Callable[[Obj], None] = lambda _p: None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.kube, self.writer, self.lease = kube, writer, lease
        self.take_over_from = frozenset(take_over_from)
        self.observe_pool = observe_pool
        self.clock = clock
        self.paced: set[str] = set()
        self.refused: dict[str, str] = {}
        """Pool -> the Lease recorded on it (another's)."""
        self._told: dict[str, str] = {}
        self._observations: dict[str, Observation] = {}
        self._looked: dict[str, tuple[float, str]] = {}

    def sort(self, pools: list[Obj]) -> tuple[list[Obj], set[str], set[str]]:
        """The pools (a claimed one as written), the names of those this controller paces,
        and of those it claimed in this call (a full pass is due for them)."""
        out, paced, claimed = [], set(), set()
        refused: dict[str, str] = {}
        for pool in pools:
            name = name_of(pool)
            recorded = str(annotations_of(pool).get(PACER_ANNOTATION) or "")
            if recorded == self.lease:
                paced.add(name)
            elif not recorded or (recorded in self.take_over_from and not self._held(recorded)):
                written = self._claim(pool, recorded)
                if written is not None:
                    out.append(written)
                    paced.add(name)
                    claimed.add(name)
                    continue
                refused[name] = recorded or "(being recorded)"  # another won the race: its
            else:  # record arrives with the watch
                refused[name] = recorded
                self._refuse(pool, recorded)
            out.append(pool)
        self.paced, self.refused = paced, refused
        for gone in set(self._told) - set(refused):
            del self._told[gone]
        return out, paced, claimed

    def mine(self, mc: Mapping[str, Any]) -> bool:
        """May this controller prune the rendered config? Only one of a pool it paces; one
        of no known pool only while it paces every pool."""
        if any(belongs(mc, pool) for pool in self.refused):
            return False
        return any(belongs(mc, pool) for pool in self.paced) or not self.refused

    # -- claims and refusals -------------------------------------------------------------

    def _claim(self, pool: Obj, recorded: str) -> Obj | None:
        name = name_of(pool)
        meta = pool.get("metadata") or {}
        patch = {"metadata": {"resourceVersion": meta.get("resourceVersion"),
                              "annotations": {PACER_ANNOTATION: self.lease}}}  # fmt: skip
        try:
            written = self.kube.request("PATCH", f"{POOLS}/{name}", body=patch,
                                        content_type=MERGE_PATCH)  # fmt: skip
        except ApiError as e:
            if e.status not in (404, 409):
                log.warning("Pool %s: could not record this controller as its pacer: %s",
                            name, e)  # fmt: skip
            return None
        self.observe_pool(written)
        if recorded:
            why = self._looked.get(recorded, (0.0, "not held"))[1]
            text = (f"Pool {name}: taken over from the controller of Lease {recorded} ({why}; "
                    f"--take-over-from {recorded}): now paced by Lease {self.lease}")  # fmt: skip
            log.warning("%s", text)
        else:
            text = f"Pool {name}: now paced by the controller of Lease {self.lease}"
            log.info("%s", text)
        self.writer.event(written, TAKEN_REASON, text)
        return written

    def _refuse(self, pool: Obj, other: str) -> None:
        """One log line and one Warning Event per pool and other Lease."""
        name = name_of(pool)
        if self._told.get(name) == other:
            return
        self._told[name] = other
        state = self._describe(other)
        text = (
            f"Pool {name} is paced by the controller of Lease {other} ({state}); this "
            f"controller (Lease {self.lease}) does not write it. To hand it over: stop that "
            f"controller, then start this one with --take-over-from {other}, or remove the "
            f"record: kubectl annotate machineconfigpool {name} {PACER_ANNOTATION}-"
        )
        log.warning("%s", text)
        self.writer.event(pool, REFUSED_REASON, text, warning=True)

    # -- the other Lease -----------------------------------------------------------------

    def _lease(self, recorded: str) -> tuple[Obj | None, str]:
        """The Lease ``NAMESPACE/NAME`` (None when it does not exist) and, when it cannot
        be read, why."""
        namespace, _, lease = recorded.partition("/")
        if not namespace or not lease:
            return None, "not a NAMESPACE/NAME"
        try:
            return self.kube.request("GET", f"{leases_path(namespace)}/{lease}"), ""
        except ApiError as e:
            return None, "" if e.status == 404 else f"cannot be read: {e}"

    def _describe(self, recorded: str) -> str:
        found, problem = self._lease(recorded)
        if problem:
            return f"its Lease {problem}"
        if found is None:
            return "its Lease does not exist"
        holder = str((found.get("spec") or {}).get("holderIdentity") or "")
        return f"held by {holder}" if holder else "its Lease is not held"

    def _held(self, recorded: str) -> bool:
        """Is the Lease still held? (True when it cannot be told: a pool is never taken on
        a guess.) Read at most every :data:`LOOK_EVERY` seconds."""
        now = self.clock()
        last = self._looked.get(recorded)
        if last is not None and now - last[0] < LOOK_EVERY:
            return last[1] == "held"
        found, problem = self._lease(recorded)
        if problem:
            state = "held"
            log.warning("Cannot take over from Lease %s: it %s", recorded, problem)
        elif found is None:
            state = "its Lease does not exist"
        else:
            spec = found.get("spec") or {}
            observation = self._observations.setdefault(recorded, Observation(self.clock))
            if not spec.get("holderIdentity"):
                state = "its Lease is not held"
            elif observation.expired(spec):
                state = f"its Lease expired (held by {spec.get('holderIdentity')})"
            else:
                state = "held"
        self._looked[recorded] = (now, state)
        return state == "held"
