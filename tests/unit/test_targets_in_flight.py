"""A pass hands its targets to the writers and goes on (the controller's ``background_targets``):
a node counts as targeted from the moment its write is handed out until a pass reads it back,
so ``maxUnavailable`` holds whatever order the API server answers in, whether it refuses, and
however a pass's snapshot and the answers interleave; and every node still gets the new config."""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mcd.cluster.api import ApiError
from mcd.controller.sync import FULL_EVERY, Snapshot, Syncer
from mcd.controller.writes import WRITERS, InFlight, NodeWrites
from mcd.model.pool.render import render
from mcd.model.vocabulary import Annotation
from tests.unit.test_controller_sync import NOW, Writer, mc, node, pool

Obj = dict[str, Any]
LIMIT = 2


def test_a_target_counts_until_a_snapshot_taken_after_its_answer() -> None:
    flying = InFlight()
    flying.begin("a", "rendered-1")
    flying.begin("b", "rendered-1")
    before = time.monotonic()
    assert flying.of(["a", "b", "c"], before) == {"a": "rendered-1", "b": "rendered-1"}
    flying.answered("a", "rendered-1", ok=True)
    flying.answered("b", "rendered-1", ok=False)  # refused: the node was never targeted
    assert flying.of(["a", "b"], before) == {"a": "rendered-1"}, "read before the answer"
    assert "a" in flying and "b" not in flying
    assert flying.of(["a", "b"], time.monotonic()) == {}, "read after it: the cache shows it"
    assert "a" not in flying


def test_an_answer_to_an_older_target_leaves_the_newer_one_counted() -> None:
    flying = InFlight()
    flying.begin("a", "rendered-1")
    flying.begin("a", "rendered-2")
    flying.answered("a", "rendered-1", ok=False)
    assert flying.of(["a"], time.monotonic()) == {"a": "rendered-2"}


class Cluster(Writer):
    """The Node writes land in ``nodes`` (the API server); the controller's cache is
    ``cache``, fed by ``observe`` and by the watch (:meth:`watch`). A Node write answers 409
    while ``refuse`` is set."""

    def __init__(self, nodes: list[Obj]) -> None:
        super().__init__()
        self.nodes = {n["metadata"]["name"]: n for n in nodes}
        self.cache = copy.deepcopy(self.nodes)
        self.refuse = False
        self.rewrites: list[str] = []
        """Nodes given a target they already had (a write handed out twice)."""

    def set_desired(
        self, node: str, config: str, taints: list[Any] | None = None, resource_version: str = ""
    ) -> Obj:
        if self.refuse:
            raise ApiError(409, "Conflict", "the object has been modified")
        super().set_desired(node, config, taints, resource_version)
        obj = copy.deepcopy(self.nodes[node])
        if obj["metadata"]["annotations"][Annotation.DESIRED_CONFIG] == config:
            self.rewrites.append(node)
        obj["metadata"]["annotations"][Annotation.DESIRED_CONFIG] = config
        if taints is not None:
            obj.setdefault("spec", {})["taints"] = taints
        self.nodes[node] = obj
        return copy.deepcopy(obj)

    def set_taints(self, node: str, taints: list[Any], resource_version: str) -> Obj:
        super().set_taints(node, taints, resource_version)
        obj = copy.deepcopy(self.nodes[node])
        obj.setdefault("spec", {})["taints"] = taints
        self.nodes[node] = obj
        return copy.deepcopy(obj)

    def observe(self, obj: Obj) -> None:
        self.cache[obj["metadata"]["name"]] = obj

    def watch(self) -> None:
        self.cache = copy.deepcopy(self.nodes)

    def finish(self, name: str) -> None:
        """The agent: the update done."""
        annotations = self.nodes[name]["metadata"]["annotations"]
        annotations[Annotation.CURRENT_CONFIG] = annotations[Annotation.DESIRED_CONFIG]
        annotations[Annotation.STATE] = "Done"


STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("pass"), st.integers(0, 3)),  # answers arriving during the pass
        st.tuples(st.just("refill"), st.integers(0, 3)),  # the same, only Nodes changed
        st.tuples(st.just("ledger"), st.integers(0, 3)),  # the same, from the pool's ledger
        st.tuples(st.just("answer"), st.booleans()),  # the next write answered (or refused)
        st.tuples(st.just("finish"), st.integers(0, 7)),  # an updating node's agent is done
        st.tuples(st.just("watch"), st.just(0)),  # the watch catches the cache up
    ),
    max_size=40,
)


@settings(max_examples=150, deadline=None)
@given(steps=STEPS)
def test_max_unavailable_holds_however_the_answers_and_passes_interleave(
    steps: list[tuple[str, Any]],
) -> None:
    old = render("worker", [mc("00-worker")])
    p = pool(maxUnavailable=LIMIT, configuration={"name": old.name})
    configs = {"00-worker": mc("00-worker"), "50-new": mc("50-new", kernelArguments=["b=2"]),
               old.name: {"metadata": {"name": old.name}, "spec": old.spec}}  # fmt: skip
    cluster = Cluster([node(f"n{i}", old.name) for i in range(8)])
    cluster.pools["worker"] = p
    jobs: list[Callable[[], None]] = []
    changed: set[str] = set()  # the Node informer's events since the last pass

    def observe(obj: Obj) -> None:  # the controller's: into the cache, and the ledger told
        cluster.observe(obj)
        syncer.refill.wrote(obj["metadata"]["name"])

    syncer = Syncer(cluster, "0.1.0", clock=lambda: NOW, observe_node=observe,  # type: ignore[arg-type]
                    observe_pool=lambda o: cluster.pools.update({"worker": o}),
                    background_targets=True)  # fmt: skip
    syncer._writes.soon = jobs.append  # type: ignore[method-assign,assignment]  # answered by the test

    def run_jobs(n: int, ok: bool = True) -> None:
        for job in jobs[:n]:
            cluster.refuse = not ok
            job()
        del jobs[:n]
        cluster.refuse = False

    def ledger_pass(answers: int) -> None:
        """A pass after Node changes only: from the ledger (the changed nodes read live),
        else a whole pass as the controller falls back."""
        taken = time.monotonic()
        names = set(changed)
        changed.clear()
        run_jobs(answers)
        if syncer.refill_pass([cluster.pools["worker"]], names, cluster.cache.get, taken) is None:
            snap = Snapshot([cluster.pools["worker"]], configs,
                            copy.deepcopy(list(cluster.cache.values())), taken=taken,
                            refill_only=True)  # fmt: skip
            syncer.sync_all(snap)

    def one_pass(answers: int, refill_only: bool = False) -> None:
        taken = time.monotonic()
        changed.clear()
        snap = Snapshot([cluster.pools["worker"]], configs,
                        copy.deepcopy(list(cluster.cache.values())), taken=taken,
                        refill_only=refill_only)  # fmt: skip
        run_jobs(answers)  # answered after the snapshot, before the pass plans
        syncer.sync_all(snap)

    def unavailable() -> int:
        """Nodes whose new config is written or being written and not applied yet."""
        target = cluster.pools["worker"]["spec"]["configuration"]["name"]
        pending = set(syncer._inflight.of(list(cluster.nodes), float("-inf")))
        count = 0
        for name, obj in cluster.nodes.items():
            a = obj["metadata"]["annotations"]
            if a[Annotation.CURRENT_CONFIG] != target and (
                a[Annotation.DESIRED_CONFIG] == target or name in pending
            ):
                count += 1
        return count

    for kind, arg in steps:
        if kind in ("pass", "refill"):
            one_pass(arg, refill_only=kind == "refill")
        elif kind == "ledger":
            ledger_pass(arg)
        elif kind == "answer":
            run_jobs(1, ok=arg)
        elif kind == "finish":
            name = f"n{arg}"
            a = cluster.nodes[name]["metadata"]["annotations"]
            if a[Annotation.DESIRED_CONFIG] != a[Annotation.CURRENT_CONFIG]:
                cluster.finish(name)
        else:
            changed.update(n for n, o in cluster.nodes.items() if cluster.cache.get(n) != o)
            cluster.watch()
        assert unavailable() <= LIMIT, f"after {kind} {arg}"
        assert cluster.rewrites == [], "a target handed out while its write was in flight"
    for _ in range(20):  # the rest of the rollout: every node gets the new config
        cluster.watch()
        one_pass(0)
        run_jobs(len(jobs))
        for name in cluster.nodes:
            a = cluster.nodes[name]["metadata"]["annotations"]
            if a[Annotation.DESIRED_CONFIG] != a[Annotation.CURRENT_CONFIG]:
                cluster.finish(name)
        assert unavailable() <= LIMIT
    assert cluster.rewrites == []
    target = cluster.pools["worker"]["spec"]["configuration"]["name"]
    assert target != old.name
    assert all(
        n["metadata"]["annotations"][Annotation.CURRENT_CONFIG] == target
        for n in cluster.nodes.values()
    )


def test_writes_not_yet_sent_are_dropped_when_the_lease_is_lost() -> None:
    """The writers' queue is cancelled (a standby may act soon); the one in flight ends."""
    writes = NodeWrites()
    gate, ran, started = threading.Event(), [], threading.Semaphore(0)

    def job(name: str) -> Callable[[], None]:
        def run() -> None:
            started.release()
            gate.wait(10)
            ran.append(name)

        return run

    for i in range(WRITERS + 5):
        writes.soon(job(f"n{i}"))
    for _ in range(WRITERS):  # the first WRITERS are in flight
        assert started.acquire(timeout=10)
    writes.cancel()
    gate.set()
    time.sleep(0.5)
    assert len(ran) == WRITERS, "the queued writes never went out"


def rolling(names: list[str], max_unavailable: int) -> tuple[Cluster, Syncer, Obj, dict[str, Obj]]:
    """A pool on its old config with ``names`` on it, a new config selected, and a Syncer
    whose background target writes run at once."""
    old = render("worker", [mc("00-worker")])
    p = pool(maxUnavailable=max_unavailable, configuration={"name": old.name})
    configs = {"00-worker": mc("00-worker"), "50-new": mc("50-new", kernelArguments=["b=2"]),
               old.name: {"metadata": {"name": old.name}, "spec": old.spec}}  # fmt: skip
    cluster = Cluster([node(n, old.name) for n in names])
    cluster.pools["worker"] = p
    syncer = Syncer(cluster, "0.1.0", clock=lambda: NOW, observe_node=cluster.observe,  # type: ignore[arg-type]
                    observe_pool=lambda o: cluster.pools.update({"worker": o}),
                    background_targets=True)  # fmt: skip
    syncer._writes.soon = lambda job: job()  # type: ignore[method-assign]
    return cluster, syncer, p, configs


def test_a_pass_that_only_refills_slots_leaves_the_status_to_a_full_one() -> None:
    """Only Nodes changed and the pool was fully synced less than FULL_EVERY ago: the pass
    hands out targets and writes nothing else; a refill with nothing to hand out, or one past
    FULL_EVERY, writes the status as every pass did."""
    cluster, syncer, _pool, configs = rolling([f"n{i}" for i in range(3)], max_unavailable=1)

    def one_pass(refill_only: bool, taken: float) -> tuple[list[str], int]:
        before = len(cluster.calls)
        snap = Snapshot([cluster.pools["worker"]], configs, copy.deepcopy(list(cluster.cache.values())),
                        taken=taken, refill_only=refill_only)  # fmt: skip
        syncer.sync_all(snap)
        calls = cluster.calls[before:]
        return [n for k, n, _v in calls if k == "desired"], sum(
            1 for c in calls if c[0] == "status"
        )

    start = time.monotonic()
    targeted, statuses = one_pass(False, start)
    assert targeted == ["n0"] and statuses == 1
    cluster.finish("n0")
    cluster.watch()
    targeted, statuses = one_pass(True, start + 0.1)
    assert targeted == ["n1"] and statuses == 0, "refilled; the status waits"
    targeted, statuses = one_pass(True, start + 0.2)
    assert targeted == [] and statuses == 1, "nothing to refill: the whole pass"
    cluster.finish("n1")
    cluster.watch()
    targeted, statuses = one_pass(True, start + 0.2 + FULL_EVERY)
    assert targeted == ["n2"] and statuses == 1, "the last full sync too long ago"


def test_a_pass_from_the_ledger_reads_the_changed_nodes_and_its_targets_not_every_node() -> None:
    """After a whole sync of a 200-node pool, a pass after one node's Done reads that node
    and the ones it targets (O(changes), not O(nodes)), hands out the freed slot and writes
    no status; a change that frees no slot writes nothing; the last node Done asks for the
    whole pass (the rollout's end is reported at once)."""
    cluster, syncer, p, configs = rolling([f"n{i:03d}" for i in range(200)], max_unavailable=2)
    syncer.sync_all(Snapshot([p], configs, copy.deepcopy(list(cluster.cache.values()))))
    assert [n for k, n, _v in cluster.calls if k == "desired"] == ["n000", "n001"]
    read: list[str] = []

    def lookup(name: str) -> Obj | None:
        read.append(name)
        return cluster.cache.get(name)

    def refill(*changed: str) -> list[str] | None:
        before, taken = len(cluster.calls), time.monotonic()
        read.clear()
        reports = syncer.refill_pass([cluster.pools["worker"]], set(changed), lookup, taken)
        calls = cluster.calls[before:]
        assert not [c for c in calls if c[0] == "status"], "the status waits for a whole pass"
        return None if reports is None else [n for k, n, _v in calls if k == "desired"]

    cluster.finish("n000")
    cluster.watch()
    assert refill("n000") == ["n002"]
    assert set(read) <= {"n000", "n001", "n002"}, "only the changed node and the targets"
    assert refill("n001") == [], "no slot free: nothing written, and no whole pass"
    assert len(read) <= 4
    for name in [f"n{i:03d}" for i in range(200)]:  # every node updated, the last Done now
        a = cluster.nodes[name]["metadata"]["annotations"]
        a[Annotation.DESIRED_CONFIG] = cluster.pools["worker"]["spec"]["configuration"]["name"]
        cluster.finish(name)
    cluster.watch()
    assert refill(*[f"n{i:03d}" for i in range(200)]) is None, "the end: a whole pass"
