"""``mcd history``, ``mcd rollback`` and ``mcd prune`` against the API server (the rules are
:mod:`mcd.model.pool.history`): a pool's revisions, pointing a pool back at an earlier
rendered config (the controller then rolls it out at the pool's pace, canary and halt
included), and removing the rendered configs nothing uses (by hand, or by the controller:
:class:`AutoPrune`)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from mcd.cluster.api import MERGE_PATCH, ApiError, Kube, Obj
from mcd.cluster.configs import MACHINECONFIGS
from mcd.cluster.pools import NODES, POOLS
from mcd.model.pool.history import (
    HISTORY_ANNOTATION,
    ROLLBACK_ANNOTATION,
    Pin,
    Revision,
    differ,
    encode_history,
    encode_pin,
    in_use,
    parse_history,
    parse_pin,
    parse_sources,
    prunable,
    record,
    unreadable,
)
from mcd.model.pool.pools import target_of
from mcd.model.pool.render import GENERATED_BY
from mcd.model.vocabulary import Annotation

log = logging.getLogger(__name__)

NODE_KEYS = (Annotation.CURRENT_CONFIG, Annotation.DESIRED_CONFIG)
"""A Node uses the rendered configs these annotations name."""
PRUNE_EVERY = 300.0
"""Seconds between the controller's prunes (not every pass: each reads every cache)."""
PRUNE_BATCH = 20
"""Rendered configs the controller deletes at most per prune (the rest wait for the next)."""

MC_KIND = {"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig"}


class RollbackError(ValueError):
    """A rollback that cannot be done; the text says why."""


def _annotations(obj: Obj) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("annotations") or {})


def revisions(pool: Obj) -> list[Revision]:
    return parse_history(_annotations(pool).get(HISTORY_ANNOTATION))


def describe_history(pool: Obj) -> str:
    """``kubectl rollout history``'s table, the pool's target marked."""
    rows = revisions(pool)
    target = target_of(pool)
    pin = parse_pin(_annotations(pool).get(ROLLBACK_ANNOTATION))
    table = [("REVISION", "CONFIG", "TIME", "BY", "CHANGE")]
    for r in rows:
        mark = " (target)" if r.config == target else ""
        table.append(
            (str(r.revision), r.config + mark, r.time or "-", r.by or "-", r.change or "-")
        )
    widths = [max(len(row[i]) for row in table) for i in range(4)]
    lines = ["  ".join([*(c.ljust(w) for c, w in zip(row[:4], widths, strict=True)), row[4]])
             for row in table]  # fmt: skip
    if not rows:
        lines.append("(no revisions recorded yet)")
    if pin is not None and pin.config == target:
        lines.append(
            f"Rolled back to {pin.config}: held while the MachineConfigs render to "
            f"{pin.rendered}; a MachineConfig change, or removing the annotation "
            f"{ROLLBACK_ANNOTATION}, ends it"
        )
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Rollback:
    pool: str
    revision: int
    config: str
    previous: str
    differs: tuple[str, ...]

    def describe(self) -> str:
        what = "; ".join(self.differs) or "no MachineConfig differs"
        return (
            f"Pool {self.pool}: rolling back from {self.previous} to {self.config} "
            f"(revision {self.revision}); MachineConfigs that differ: {what}. The controller "
            f"rolls it out at the pool's pace; the pool stays on it until a MachineConfig "
            f"changes or: kubectl annotate machineconfigpool {self.pool} {ROLLBACK_ANNOTATION}-\n"
        )


def rollback(kube: Kube, pool_name: str, to_revision: int | None, by: str, now: str) -> Rollback:
    """Point the pool at an earlier revision's rendered config (default: the one before
    the target) and pin it there (:class:`mcd.model.pool.history.Pin`)."""
    pool = kube.request("GET", f"{POOLS}/{pool_name}")
    history = revisions(pool)
    current = target_of(pool)
    if to_revision is None:
        earlier = [r for r in history if r.config != current]
        if not earlier:
            raise RollbackError(f"pool {pool_name} has no earlier revision to roll back to")
        chosen = earlier[-1]
    else:
        found = [r for r in history if r.revision == to_revision]
        if not found:
            known = ", ".join(str(r.revision) for r in history) or "none"
            raise RollbackError(
                f"pool {pool_name} has no revision {to_revision} (revisions: {known})"
            )
        chosen = found[0]
    if chosen.config == current:
        raise RollbackError(
            f"pool {pool_name} already targets {current} (revision {chosen.revision})"
        )
    try:
        old = kube.request("GET", f"{MACHINECONFIGS}/{chosen.config}")
    except ApiError as e:
        if e.status == 404:
            raise RollbackError(
                f"rendered MachineConfig {chosen.config} of revision {chosen.revision} no "
                "longer exists; cannot roll back to it"
            ) from None
        raise
    now_doc = None
    if current:
        try:
            now_doc = kube.request("GET", f"{MACHINECONFIGS}/{current}")
        except ApiError as e:
            if e.status != 404:
                raise
    old_sources = parse_sources(old)
    differs = differ(parse_sources(now_doc), old_sources)
    pin = parse_pin(_annotations(pool).get(ROLLBACK_ANNOTATION))
    fresh = pin.rendered if pin is not None else current
    change = f"rollback to revision {chosen.revision}: " + ("; ".join(differs) or "nothing")
    history = record(history, chosen.config, now, by, change)
    source = [{**MC_KIND, "name": s} for s in sorted(old_sources or {})]
    patch = {
        "metadata": {"annotations": {
            ROLLBACK_ANNOTATION: encode_pin(Pin(chosen.config, fresh)),
            HISTORY_ANNOTATION: encode_history(history),
        }, "resourceVersion": (pool.get("metadata") or {}).get("resourceVersion")},
        "spec": {"configuration": {"name": chosen.config, "source": source}},
    }  # fmt: skip
    kube.request("PATCH", f"{POOLS}/{pool_name}", body=patch, content_type=MERGE_PATCH)
    return Rollback(pool_name, chosen.revision, chosen.config, current, tuple(differs))


@dataclass(frozen=True)
class Pruned:
    gone: list[str]
    """The rendered configs deleted (or, without ``apply``, that would be)."""
    kept: int
    """The rendered configs kept."""
    guarded: dict[str, str]
    """Pool -> why its history cannot be read: none of its rendered configs may go."""


def guarded_pools(pools: Iterable[Obj]) -> dict[str, str]:
    """The pools whose history or rollback pin cannot be read, and why
    (:func:`mcd.model.pool.history.unreadable`)."""
    out = {}
    for pool in pools:
        problem = unreadable(pool)
        if problem:
            out[str((pool.get("metadata") or {}).get("name") or "")] = problem
    return out


def guard_line(pool: str, problem: str) -> str:
    """The one line that says an unreadable history protects a pool's rendered configs."""
    return (
        f"pool {pool}: {problem}: it may name a rendered config kept for a rollback, so none "
        f"of pool {pool}'s rendered configs is pruned (fix or remove the annotation to prune)"
    )


def prune(kube: Kube, now: datetime, grace: timedelta, apply: bool) -> Pruned:
    """The rendered configs nothing uses and older than ``grace`` (deleted with ``apply``),
    none of them a pool's whose history cannot be read (:func:`guarded_pools`)."""
    configs = kube.request("GET", MACHINECONFIGS).get("items") or []
    pools = kube.request("GET", POOLS).get("items") or []
    nodes = kube.request("GET", NODES).get("items") or []
    used = in_use(pools, nodes, NODE_KEYS)
    guarded = guarded_pools(pools)
    gone = prunable(configs, used, now, grace, GENERATED_BY, guarded)
    rendered = sum(1 for c in configs if _annotations(c).get(GENERATED_BY))
    if apply:
        for name in gone:
            try:
                kube.request("DELETE", f"{MACHINECONFIGS}/{name}")
            except ApiError as e:
                if e.status != 404:
                    raise
    return Pruned(gone, rendered - len(gone), guarded)


Items = Callable[[], Iterable[Obj]]


class AutoPrune:
    """The controller's prune (``--prune-grace``; 0 turns it off): every ``every`` seconds
    at most, the rendered configs :func:`mcd.model.pool.history.prunable` names, at most
    ``batch`` of them. Each is judged again just before its delete against the freshest
    caches (the pools the pass just wrote are in them), and deleted with preconditions on
    the uid and resourceVersion it was judged by, so a config that changed meanwhile stays.
    A pool whose history cannot be read keeps every rendered config of its own, a warning
    each prune (:func:`guarded_pools`)."""

    def __init__(self, kube: Kube, grace: timedelta, every: float = PRUNE_EVERY,
                 batch: int = PRUNE_BATCH,
                 mine: Callable[[Obj], bool] = lambda _mc: True) -> None:  # fmt: skip
        self.kube, self.grace, self.every, self.batch = kube, grace, every, batch
        self.mine = mine
        """Whether a rendered config is this controller's to prune (one of the pools it
        paces: :class:`mcd.controller.leadership.pacer.Pacer`)."""
        self.last: float | None = None

    def due(self, clock: float) -> bool:
        """Is a prune due at monotonic ``clock``? (The first one: ``every`` after the first
        call, so a new leader's first passes settle the targets first.)"""
        if self.grace <= timedelta(0):
            return False
        if self.last is None:
            self.last = clock
        return clock - self.last >= self.every

    def run(self, configs: Items, pools: Items, nodes: Items, now: datetime,
            clock: float) -> list[str]:  # fmt: skip
        """Delete what may go; the names deleted."""
        self.last = clock
        guarded = guarded_pools(pools())
        for pool, problem in sorted(guarded.items()):
            log.warning("Prune: %s", guard_line(pool, problem))
        candidates = prunable(configs(), in_use(pools(), nodes(), NODE_KEYS), now, self.grace,
                              GENERATED_BY, guarded)  # fmt: skip
        known = {str((c.get("metadata") or {}).get("name")): c for c in configs()}
        candidates = [c for c in candidates if c in known and self.mine(known[c])]
        gone = []
        for name in candidates[: self.batch]:
            fresh = {str((c.get("metadata") or {}).get("name")): c for c in configs()}
            mc = fresh.get(name)
            used = in_use(pools(), nodes(), NODE_KEYS)
            guarded = guarded_pools(pools())
            if mc is None or not prunable([mc], used, now, self.grace, GENERATED_BY, guarded):
                continue
            meta = mc.get("metadata") or {}
            judged = {"uid": meta.get("uid"), "resourceVersion": meta.get("resourceVersion")}
            body = {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": judged}
            try:
                self.kube.request("DELETE", f"{MACHINECONFIGS}/{name}", body=body)
            except ApiError as e:
                if e.status not in (404, 409):
                    log.warning("Could not prune rendered config %s: %s", name, e)
                continue
            log.info("Pruned rendered config %s: no node, pool or revision uses it, created %s "
                     "(grace %s)", name, meta.get("creationTimestamp"), self.grace)  # fmt: skip
            gone.append(name)
        if len(candidates) > self.batch:
            log.info("%d more unused rendered configs wait for the next prune",
                     len(candidates) - self.batch)  # fmt: skip
        return gone
