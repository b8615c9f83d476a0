"""The incremental controller pass: a change touches the pools it names
(:func:`mcd.model.pool.touched.touched`), and a pass over only those leaves the cluster exactly
as a pass over every pool would. The property is checked on a small in-memory cluster: from a
settled state, one change (a node's state, labels, a node added or gone, a pool's spec or
selector, a MachineConfig added, relabelled or changed), then a full pass on one copy and the
incremental pass on the other: the same objects written, the same cluster after."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcd.controller.dirty import DirtyPools
from mcd.controller.sync import Snapshot, Syncer
from mcd.model.pool.pools import UPDATE_TAINT
from mcd.model.pool.render import ROLE_LABEL, render
from mcd.model.pool.touched import EVERY, Changes, touched
from mcd.model.vocabulary import Annotation
from tests.unit.test_controller_sync import NOW, Writer, mc

Obj = dict[str, Any]
KEYS = ("role", "zone", "gpu")
VALUES = ("a", "b")


class Store(Writer):
    """A cluster in memory: every write lands on its objects, each with a new resourceVersion."""

    def __init__(self, pools: list[Obj], nodes: list[Obj], configs: list[Obj]) -> None:
        super().__init__()
        self.pools = {p["metadata"]["name"]: p for p in pools}
        self.nodes = {n["metadata"]["name"]: n for n in nodes}
        self.configs = {c["metadata"]["name"]: c for c in configs}
        self.version = 1000

    def stamp(self, obj: Obj) -> Obj:
        self.version += 1
        obj["metadata"]["resourceVersion"] = str(self.version)
        return obj

    def snapshot(self) -> Snapshot:
        return Snapshot(
            [copy.deepcopy(self.pools[k]) for k in sorted(self.pools)],
            {k: copy.deepcopy(v) for k, v in self.configs.items()},
            [copy.deepcopy(self.nodes[k]) for k in sorted(self.nodes)],
        )

    def create_config(self, obj: Obj) -> Obj | None:
        super().create_config(obj)
        self.configs[obj["metadata"]["name"]] = self.stamp(copy.deepcopy(obj))
        return copy.deepcopy(self.configs[obj["metadata"]["name"]])

    def set_configuration(self, pool: str, configuration: Obj,
                          annotations: dict[str, str | None] | None = None) -> Obj:  # fmt: skip
        return self.stamp(super().set_configuration(pool, configuration, annotations))

    def set_pool_annotation(self, pool: str, key: str, value: str | None) -> Obj:
        return self.stamp(super().set_pool_annotation(pool, key, value))

    def set_status(self, pool: str, status: Obj) -> Obj:
        super().set_status(pool, status)
        self.pools[pool] = self.stamp({**self.pools[pool], "status": copy.deepcopy(status)})
        return copy.deepcopy(self.pools[pool])

    def set_desired(self, node: str, config: str, taints: list[Any] | None = None,
                    resource_version: str = "") -> Obj:  # fmt: skip
        super().set_desired(node, config, taints, resource_version)
        obj = copy.deepcopy(self.nodes[node])
        obj["metadata"]["annotations"][Annotation.DESIRED_CONFIG] = config
        if taints is not None:
            obj["spec"]["taints"] = taints
        self.nodes[node] = self.stamp(obj)
        return copy.deepcopy(obj)

    def set_taints(self, node: str, taints: list[Any], resource_version: str) -> Obj:
        super().set_taints(node, taints, resource_version)
        obj = copy.deepcopy(self.nodes[node])
        obj["spec"]["taints"] = taints
        self.nodes[node] = self.stamp(obj)
        return copy.deepcopy(obj)

    def writes(self) -> list[tuple[str, str, Any]]:
        """Every write but Events (a pass says some of them, e.g. ``SelectingAll``, each time)."""
        return [c for c in self.calls if c[0] != "event"]


def labels() -> st.SearchStrategy[dict[str, str]]:
    return st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=3)


def selector() -> st.SearchStrategy[Any]:
    expression = st.fixed_dictionaries({
        "key": st.sampled_from(KEYS),
        "operator": st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Near"]),
    }).flatmap(lambda e: st.just(e) if e["operator"] in ("Exists", "DoesNotExist") else
               st.lists(st.sampled_from(VALUES), max_size=2).map(lambda v: {**e, "values": v}))  # fmt: skip
    return st.one_of(
        st.builds(lambda m: {"matchLabels": m}, labels()),
        st.builds(lambda x: {"matchExpressions": x}, st.lists(expression, max_size=2)),
    )


def a_pool(name: str, node_selector: Any, spec: Obj) -> Obj:
    return {"metadata": {"name": name, "uid": name, "generation": 1, "annotations": {}},
            "spec": {"machineConfigSelector": {"matchLabels": {ROLE_LABEL: name}},
                     "nodeSelector": node_selector, **spec}}  # fmt: skip


def a_node(name: str, node_labels: dict[str, str], config: str, state: str) -> Obj:
    return {"metadata": {"name": name, "resourceVersion": "1", "labels": node_labels,
                         "annotations": {Annotation.CURRENT_CONFIG: config,
                                         Annotation.DESIRED_CONFIG: config,
                                         Annotation.STATE: state}},
            "spec": {"taints": [dict(UPDATE_TAINT)] if state == "Working" else []},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}}  # fmt: skip


def role_config(name: str, pool: str, text: str = "") -> Obj:
    obj = mc(name, kernelArguments=[f"x={text}"] if text else [])
    obj["metadata"]["labels"] = {ROLE_LABEL: pool}
    obj["metadata"]["resourceVersion"] = "1"
    return obj


@st.composite
def clusters(draw: st.DrawFn) -> Store:
    names = ["worker", *draw(st.lists(st.sampled_from(["infra", "gpu", "master"]),
                                      unique=True, max_size=2))]  # fmt: skip
    pools, configs = [], []
    for name in names:
        node_selector = {"matchLabels": {"role": "a"}} if name == "worker" else draw(selector())
        spec = {"maxUnavailable": draw(st.sampled_from([1, 2, "50%"])),
                "paused": draw(st.booleans())}  # fmt: skip
        configs.append(role_config(f"00-{name}", name))
        old = render(name, [configs[-1]])
        pools.append(a_pool(name, node_selector, {**spec, "configuration": {"name": old.name}}))
        configs.append(old.object(pools[-1], "v"))
        configs[-1]["metadata"]["resourceVersion"] = "1"
        if draw(st.booleans()):  # a new MachineConfig to roll out
            configs.append(role_config(f"50-{name}", name, "new"))
    nodes = []
    for i in range(draw(st.integers(1, 5))):
        pool = draw(st.sampled_from(names))
        nodes.append(a_node(f"n{i}", draw(labels()), render(pool, [role_config(
            f"00-{pool}", pool)]).name, draw(st.sampled_from(["Done", "Working", "Degraded"]))))  # fmt: skip
    return Store(pools, nodes, configs)


def full_pass(store: Store, syncer: Syncer, only: frozenset[str] | None = None) -> None:
    syncer.sync_all(store.snapshot(), only)


def settled(store: Store, syncer: Syncer) -> bool:
    for _ in range(6):
        before = len(store.writes())
        full_pass(store, syncer)
        if len(store.writes()) == before:
            return True
    return False


def change(draw: Any, store: Store, changes: Changes) -> None:
    """One change to ``store``, told to ``changes`` as the informers would tell it."""
    kind = draw(st.sampled_from(["state", "labels", "node+", "node-", "pool", "selector",
                                 "config", "config-labels"]))  # fmt: skip
    if kind in ("state", "labels", "node-") and store.nodes:
        name = draw(st.sampled_from(sorted(store.nodes)))
        old = store.nodes[name]
        new = copy.deepcopy(old)
        if kind == "node-":
            del store.nodes[name]
            changes.node(old, None)
            return
        if kind == "state":
            a = new["metadata"]["annotations"]
            a[Annotation.CURRENT_CONFIG] = a[Annotation.DESIRED_CONFIG]
            a[Annotation.STATE] = draw(st.sampled_from(["Done", "Working", "Degraded"]))
        else:
            new["metadata"]["labels"] = draw(labels())
        store.nodes[name] = store.stamp(new)
        changes.node(old, new)
    elif kind == "node+":
        new = store.stamp(a_node(f"n{len(store.nodes) + 10}", draw(labels()), "", "Done"))
        store.nodes[new["metadata"]["name"]] = new
        changes.node(None, new)
    elif kind in ("pool", "selector"):
        name = draw(st.sampled_from(sorted(store.pools)))
        old = store.pools[name]
        new = copy.deepcopy(old)
        if kind == "selector":
            new["spec"]["nodeSelector"] = draw(selector())
        else:
            new["spec"]["paused"] = not new["spec"].get("paused")
            new["spec"]["maxUnavailable"] = draw(st.sampled_from([1, 3]))
        store.pools[name] = store.stamp(new)
        changes.pool(old, new)
    else:
        pool = draw(st.sampled_from(sorted(store.pools)))
        name = draw(st.sampled_from([f"60-{pool}", f"00-{pool}"]))
        before = store.configs.get(name)
        new = role_config(name, pool, draw(st.sampled_from(["one", "two"])))
        if kind == "config-labels":
            new["metadata"]["labels"] = {ROLE_LABEL: draw(st.sampled_from(sorted(store.pools)))}
        store.configs[name] = store.stamp(new)
        changes.config(before, new)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), st.data())
def test_a_pass_over_the_touched_pools_leaves_the_cluster_as_a_full_pass_would(
    cluster: Store, data: st.DataObject
) -> None:
    full, incremental = cluster, copy.deepcopy(cluster)
    a = Syncer(full, "v", clock=lambda: NOW)  # type: ignore[arg-type]
    b = Syncer(incremental, "v", clock=lambda: NOW)  # type: ignore[arg-type]
    if not (settled(full, a) and settled(incremental, b)):
        return  # a cluster that keeps changing without any change: nothing to compare
    changes = Changes()
    change(data.draw, full, changes)
    incremental.pools, incremental.nodes = copy.deepcopy(full.pools), copy.deepcopy(full.nodes)
    incremental.configs, incremental.version = copy.deepcopy(full.configs), full.version
    only = touched(list(incremental.pools.values()), changes)
    start_a, start_b = len(full.writes()), len(incremental.writes())
    full_pass(full, a)
    full_pass(incremental, b, only)
    assert incremental.writes()[start_b:] == full.writes()[start_a:]
    assert (incremental.pools, incremental.nodes, incremental.configs) == (
        full.pools, full.nodes, full.configs)  # fmt: skip


def node_labelled(node_labels: dict[str, str], state: str = "Done") -> Obj:
    return a_node("n1", node_labels, "c", state)


def test_a_node_change_touches_the_pools_that_select_it_and_only_those() -> None:
    pools = [a_pool("worker", {"matchLabels": {"role": "a"}}, {}),
             a_pool("infra", {"matchExpressions": [{"key": "zone", "operator": "Exists"}]}, {}),
             a_pool("master", {"matchLabels": {"role": "m"}}, {})]  # fmt: skip
    changes = Changes()
    changes.node(node_labelled({"role": "a", "zone": "b"}),
                 node_labelled({"role": "a", "zone": "b"}, "Working"))  # fmt: skip
    assert touched(pools, changes) == frozenset({"worker", "infra"})
    changes = Changes()
    changes.node(node_labelled({"role": "a"}), node_labelled({"role": "a", "zone": "b"}))
    assert touched(pools, changes) is EVERY, "a relabelled node may move between pools"


def test_a_pool_or_config_change_touches_its_pool_and_a_reselect_touches_all() -> None:
    worker = a_pool("worker", {"matchLabels": {"role": "a"}}, {})
    infra = a_pool("infra", {"matchLabels": {"role": "i"}}, {})
    changes = Changes()
    changes.pool(infra, {**infra, "spec": {**infra["spec"], "paused": True}})
    changes.config(None, role_config("50-infra", "infra"))
    assert touched([worker, infra], changes) == frozenset({"infra"})
    changes = Changes()
    changes.pool(infra, {**infra, "spec": {**infra["spec"], "nodeSelector": {}}})
    assert touched([worker, infra], changes) is EVERY
    changes = Changes()
    changes.config(None, {"metadata": {"name": "rendered-worker-1"}})
    assert touched([worker, infra], changes) is EVERY, "nodes and pools name rendered configs"


def test_a_pool_status_written_back_asks_for_no_pass_but_its_annotations_do() -> None:
    """The status is the controller's own output: the watch event of its own status write
    (which can arrive before the write's answer is in the cache) touches no pool, or every
    whole pass would ask for the next one at once."""
    worker = a_pool("worker", {"matchLabels": {"role": "a"}}, {})
    worker["metadata"]["resourceVersion"] = "7"
    written = copy.deepcopy(worker)
    written["metadata"].update(resourceVersion="8", managedFields=[{"manager": "mcd"}])
    written["status"] = {"machineCount": 3, "conditions": [{"type": "Updating"}]}
    changes = Changes()
    changes.pool(worker, written)
    assert not changes and touched([written], changes) == frozenset()
    paused = copy.deepcopy(written)
    paused["metadata"]["annotations"] = {"example.com/hold": "1"}
    changes.pool(written, paused)
    assert touched([paused], changes) == frozenset({"worker"}), "metadata is input"
    changes = Changes()
    changes.pool(written, {**written, "spec": {**written["spec"], "paused": True}})
    assert touched([written], changes) == frozenset({"worker"})


def test_a_full_pass_comes_at_least_every_period_whatever_changed() -> None:
    dirty = DirtyPools(every=2.0)
    pools = [a_pool("worker", {"matchLabels": {"role": "a"}}, {})]
    assert dirty.pools_of(dirty.take(0.0), pools, 0.0) is EVERY, "the first pass is full"
    dirty.node(node_labelled({"role": "a"}), node_labelled({"role": "a"}, "Working"))
    assert dirty.pools_of(dirty.take(1.0), pools, 1.0) == frozenset({"worker"})
    assert dirty.pools_of(dirty.take(1.5), pools, 1.5) == frozenset(), "nothing changed"
    assert dirty.pools_of(dirty.take(2.0), pools, 2.0) is EVERY
    dirty.everything()
    assert dirty.pools_of(dirty.take(2.1), pools, 2.1) is EVERY
