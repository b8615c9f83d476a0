"""Which pools the changes since the last controller pass touch, so that a pass recomputes
only those (the others cannot have moved). Pure.

* a Node whose labels did not change touches the pools whose ``nodeSelector`` selects it
  (its primary pool, and the custom pools it is in conflict with);
* a MachineConfig touches the pools whose ``machineConfigSelector`` selects it, before or
  after the change;
* a pool touches itself, unless its ``nodeSelector`` changed.

Everything else touches :data:`EVERY` pool (a full pass): a Node added, deleted or relabelled
(it may move between pools, or into two: hygiene), a pool added, deleted or given another
``nodeSelector`` (every node's pool may change), a rendered MachineConfig or one a pool names
(nodes and pools read it by name), a selector that cannot be evaluated, and any change the
caller cannot name (:meth:`Changes.everything`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mcd.model.pool.hygiene import selector_problem
from mcd.model.pool.pools import SelectorError, name_of, selector_matches, target_of
from mcd.model.pool.render import RENDERED_PREFIX

Obj = Mapping[str, Any]
Labels = Mapping[str, str]

EVERY = None
"""What :func:`touched` answers when every pool needs a pass."""
MANY = 20_000
"""Node changes between two passes past which the next pass is a full one (a pass that only
refills slots costs in proportion to the changes: at 25,000 nodes, 2,000 changes came within
one slow pass, and each full pass then let more gather for the next)."""


def _labels(obj: Obj) -> Labels:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return labels if isinstance(labels, Mapping) else {}


_VOLATILE = frozenset({"resourceVersion", "managedFields", "generation"})


def _status_only(old: Obj, new: Obj) -> bool:
    """Whether a pool changed in nothing but its status (and the bookkeeping of any write).
    The status is the controller's own output, no input to a pass: its write's watch event,
    arriving before the write's answer went into the cache, asked for a whole pass after
    every whole pass (every 0.8 s at 10,000 nodes, where the clock asks every 2 s)."""
    if old.get("spec") != new.get("spec") or set(old) - {"status"} != set(new) - {"status"}:
        return False
    if any(old.get(k) != v for k, v in new.items() if k not in ("metadata", "spec", "status")):
        return False
    meta_old, meta_new = old.get("metadata") or {}, new.get("metadata") or {}
    keys = (set(meta_old) | set(meta_new)) - _VOLATILE
    return all(meta_old.get(k) == meta_new.get(k) for k in keys)


def _node_selector(pool: Obj) -> object:
    return (pool.get("spec") or {}).get("nodeSelector")


@dataclass
class Changes:
    """The changes since the last pass, as the informers reported them (old, new)."""

    full: bool = False
    pools: set[str] = field(default_factory=set)
    node_labels: list[Labels] = field(default_factory=list)
    config_labels: list[Labels] = field(default_factory=list)
    config_names: set[str] = field(default_factory=set)
    node_names: set[str] = field(default_factory=set)
    """The Nodes changed (a refill touches only these: :mod:`mcd.model.pool.ledger`)."""
    timer: bool = False
    """A whole pass is due by the clock (no change asked for one: no node changed pools)."""

    def everything(self) -> None:
        """A change the caller cannot name (a relist, a drain's outcome, a timer)."""
        self.full = True

    def node(self, old: Obj | None, new: Obj | None) -> None:
        if old is None or new is None or _labels(old) != _labels(new):
            self.full = True
        elif len(self.node_labels) >= MANY:
            self.full = True  # as cheap as matching them all, and the list stays bounded
        elif not self.full:
            self.node_labels.append(_labels(new))
            self.node_names.add(name_of(new))

    def pool(self, old: Obj | None, new: Obj | None) -> None:
        if old is None or new is None or name_of(old) != name_of(new):
            self.full = True  # a pool added or deleted: every node's pool may change
        elif _node_selector(old) != _node_selector(new):
            self.full = True  # so may a new nodeSelector
        elif not _status_only(old, new):
            self.pools.add(name_of(new))

    def config(self, old: Obj | None, new: Obj | None) -> None:
        for obj in (old, new):
            if obj is None:
                continue
            meta = obj.get("metadata") or {}
            name = name_of(obj)
            if name.startswith(RENDERED_PREFIX) or meta.get("ownerReferences"):
                self.full = True
            self.config_names.add(name)
            self.config_labels.append(_labels(obj))

    def __bool__(self) -> bool:
        return self.full or self.timer or bool(self.pools or self.node_labels or self.config_names)

    @property
    def nodes_only(self) -> bool:
        """Only Nodes changed, none of them between pools (a node Done, Working...)."""
        return not (self.full or self.timer or self.pools or self.config_names) and bool(
            self.node_labels
        )


def touched(pools: Sequence[Obj], changes: Changes) -> frozenset[str] | None:
    """The names of the pools ``changes`` touch, or :data:`EVERY` (None) for a full pass."""
    if changes.full or changes.timer:
        return EVERY
    names = {name_of(p) for p in pools}
    found = set(changes.pools) & names
    named = {target_of(p) for p in pools} | {
        str(((p.get("status") or {}).get("configuration") or {}).get("name") or "") for p in pools
    }
    if changes.config_names & named:
        return EVERY
    try:
        for pool in pools:
            name = name_of(pool)
            if name in found:
                continue
            selector = _node_selector(pool)
            nodes = changes.node_labels if not selector_problem(selector) else []
            if any(selector_matches(selector, labels) for labels in nodes):  # type: ignore[arg-type]
                found.add(name)
                continue
            selector = (pool.get("spec") or {}).get("machineConfigSelector")
            if selector is not None and not isinstance(selector, Mapping):
                return EVERY
            configs = changes.config_labels if selector is not None else []
            if any(selector_matches(selector, labels) for labels in configs):
                found.add(name)
    except (SelectorError, AttributeError, TypeError):
        return EVERY
    return frozenset(found)
