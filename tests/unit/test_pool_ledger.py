"""A pool's ledger (:mod:`mcd.model.pool.ledger`), kept node by node, equals one counted from
scratch after any sequence of node changes, and refills what the whole plan
(:func:`mcd.model.pool.rollout.plan_rollout`) chooses for a plain pool; where it cannot say
(a node Degraded on the target, one stranded on an older target, an invalid
``maxUnavailable``) it says so instead of guessing."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mcd.model.pool.ledger import Ledger
from mcd.model.pool.pools import NodeView
from mcd.model.pool.rollout import plan_rollout

TARGET, OLD = "rendered-worker-new", "rendered-worker-old"
NAMES = [f"n{i}" for i in range(8)]


@st.composite
def views(draw: st.DrawFn, name: str) -> NodeView:
    """Any state a node of the pool can be in, as its agent, kubelet and admin leave it."""
    configs = st.sampled_from(["", OLD, TARGET])
    return NodeView(
        name=name,
        current=draw(configs),
        desired=draw(configs),
        state=draw(st.sampled_from(["", "Done", "Working", "Degraded", "Unreconcilable"])),
        ready=draw(st.booleans()),
        unschedulable=draw(st.booleans()),
        zone=draw(st.sampled_from([None, "a", "b"])),
        created=draw(st.sampled_from(["2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z"])),
        rebooting=draw(st.booleans()),
    )


def fleet(size: int) -> st.SearchStrategy[list[NodeView]]:
    return st.tuples(*(views(n) for n in NAMES[:size])).map(list)


def changes(size: int) -> st.SearchStrategy[list[NodeView]]:
    return st.lists(st.sampled_from(NAMES[:size]).flatmap(views), max_size=30)


def same(a: Ledger, b: Ledger) -> None:
    assert (a.target, a.views, a.unavailable, a.unusual, a.candidates) == (
        b.target, b.views, b.unavailable, b.unusual, b.candidates)  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(data=st.data(), size=st.integers(1, len(NAMES)))
def test_a_ledger_kept_node_by_node_equals_one_counted_from_scratch(
    data: st.DataObject, size: int
) -> None:
    start = data.draw(fleet(size))
    kept = Ledger.of(TARGET, start)
    members = {v.name: v for v in start}
    for view in data.draw(changes(size)):
        kept.put(view)
        members[view.name] = view
        same(kept, Ledger.of(TARGET, members.values()))
    kept.put(NodeView(name="stranger", desired=OLD))  # another pool's node: not counted
    same(kept, Ledger.of(TARGET, members.values()))
    assert kept.refresh(list(members.values()))
    assert not kept.refresh(list(members.values())[1:]), "a member gone: counted from scratch"


def pool(max_unavailable: Any) -> dict[str, Any]:
    return {"metadata": {"name": "worker"},
            "spec": {"configuration": {"name": TARGET}, "maxUnavailable": max_unavailable}}  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(
    data=st.data(), size=st.integers(1, len(NAMES)),
    limit=st.sampled_from([None, 1, 2, 3, 0, "50%", "10%", "x", -1]),
)  # fmt: skip
def test_a_refill_from_the_ledger_chooses_what_the_whole_plan_chooses(
    data: st.DataObject, size: int, limit: Any
) -> None:
    ledger = Ledger.of(TARGET, data.draw(fleet(size)))
    for view in data.draw(changes(size)):
        ledger.put(view)
    members = list(ledger.views.values())
    whole = plan_rollout(pool(limit), members)
    refill = ledger.refill(limit)
    if refill is None:  # it cannot weigh these alone: the plan saw the same
        assert (
            whole.error
            or whole.failing
            or any(
                v.failing and not v.schedulable_and_ready and v.desired != TARGET for v in members
            )
        )
    else:
        assert refill == whole.targets
