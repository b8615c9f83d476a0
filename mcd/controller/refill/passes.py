"""The controller's pass after nothing but Node changes that moved no node between pools: it
reads the changed Nodes alone (not the whole cache), leaves the drains to a whole pass when
none is kept or asked for, and refills the touched pools from their ledgers
(:meth:`mcd.controller.sync.Syncer.refill_pass`); anything it cannot decide alone is a
whole pass, as before."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

from mcd.cluster.api import Obj
from mcd.controller.drain import DrainController
from mcd.controller.sync import PoolReport, Syncer
from mcd.model.pool.pools import name_of
from mcd.model.pool.touched import Changes

Lookup = Callable[[str], Obj | None]


def changed_nodes(changes: Changes, items: Callable[[], list[Obj]], lookup: Lookup) -> list[Obj]:
    """The Nodes a pass looks at for what each one asks (custom pool labels, drains): the
    changed ones in a pass that only refills, else all (``items``)."""
    if not changes.nodes_only:
        return items()
    return [n for n in map(lookup, sorted(changes.node_names)) if n is not None]


def refill_only(
    changes: Changes, pools: Sequence[Obj], only: Collection[str], syncer: Syncer,
    drains: DrainController, lookup: Lookup, taken: float,
) -> list[PoolReport] | None:  # fmt: skip
    """The reports of a pass that only refilled ``only``'s slots, or None: a whole pass."""
    if not changes.nodes_only or not drains.idle(changed_nodes(changes, list, lookup)):
        return None  # (``list``: never called, only Nodes changed)
    touched = [p for p in pools if name_of(p) in only]
    return syncer.refill_pass(touched, changes.node_names, lookup, taken)
