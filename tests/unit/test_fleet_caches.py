"""What keeps a pass cheap at fleet scale, without changing what it decides: the Node cache
holds only the fields the controller reads; a pass whose MachineConfigs did not change
renders nothing; the rendered config is still refused when someone edits it."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from mcd.cluster.api import ApiError
from mcd.cluster.pools import node_fields
from mcd.controller import rendering
from mcd.controller.sync import Snapshot, Syncer
from mcd.controller.writes import QUEUED, NodeWrites
from mcd.model.pool.render import render
from mcd.model.pool.rollout import condition
from tests.unit.test_controller_sync import NOW, Writer, mc, node, pool

Obj = dict[str, Any]


def test_the_node_cache_keeps_what_the_controller_reads_and_nothing_else() -> None:
    node = {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "n1", "uid": "u", "resourceVersion": "7",
                     "creationTimestamp": "2026-01-01T00:00:00Z", "labels": {"a": "b"},
                     "annotations": {"machineconfiguration.openshift.io/state": "Done",
                                     "mcd-project.github.io/drain-released": "x",
                                     "k8s.ovn.org/node-subnets": "{...}" * 1000},
                     "managedFields": [{"manager": "kubelet"}] * 50},
        "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}], "unschedulable": True,
                 "podCIDR": "10.0.0.0/24"},
        "status": {"conditions": [{"type": "Ready", "status": "True", "message": "m" * 500}],
                   "images": [{"names": ["x"] * 10}] * 100},
    }  # fmt: skip
    assert node_fields(node) == {
        "metadata": {"name": "n1", "uid": "u", "resourceVersion": "7",
                     "creationTimestamp": "2026-01-01T00:00:00Z", "labels": {"a": "b"},
                     "annotations": {"machineconfiguration.openshift.io/state": "Done",
                                     "mcd-project.github.io/drain-released": "x"}},
        "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}], "unschedulable": True},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }  # fmt: skip


def versioned(obj: Obj, version: str) -> Obj:
    return {**obj, "metadata": {**obj["metadata"], "resourceVersion": version}}


def test_unchanged_machineconfigs_are_not_rendered_again(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = rendering.render  # type: ignore[attr-defined]

    def counted(name: str, configs: Any, *base: Any) -> Any:
        calls.append(1)
        return real(name, configs, *base)

    monkeypatch.setattr(rendering, "render", counted)
    p = pool()
    writer = Writer()
    writer.pools["worker"] = p
    syncer = Syncer(writer, "0.1.0", clock=lambda: NOW)  # type: ignore[arg-type]
    base = versioned(mc("00-worker"), "1")
    for _ in range(3):
        syncer.sync_pool(p, Snapshot([p], {"00-worker": base}, []))
    assert len(calls) == 1, "three passes, one render"
    changed = versioned(mc("00-worker", kernelArguments=["a=1"]), "2")
    syncer.sync_pool(p, Snapshot([p], {"00-worker": changed}, []))
    assert len(calls) == 2, "a new resourceVersion renders again"


def test_an_edited_rendered_config_is_still_refused_with_the_render_cached() -> None:
    p = pool()
    writer = Writer()
    writer.pools["worker"] = p
    syncer = Syncer(writer, "0.1.0", clock=lambda: NOW)  # type: ignore[arg-type]
    base = versioned(mc("00-worker"), "1")
    syncer.sync_pool(p, Snapshot([p], {"00-worker": base}, []))
    ((name, created),) = writer.of("create")
    stored = versioned(created, "5")
    report = syncer.sync_pool(p, Snapshot([p], {"00-worker": base, name: stored}, []))
    rd = condition(report.status["conditions"], "RenderDegraded")
    assert rd is not None and rd["status"] == "False"
    edited = {**stored, "metadata": {**stored["metadata"], "resourceVersion": "6"},
              "spec": {**stored["spec"], "fips": True}}  # fmt: skip
    report = syncer.sync_pool(p, Snapshot([p], {"00-worker": base, name: edited}, []))
    rd = condition(report.status["conditions"], "RenderDegraded")
    assert rd is not None and "was changed after it was created" in rd["message"]


def test_node_writes_observe_every_success_before_raising() -> None:
    def write(name: str) -> Obj:
        if name == "conflict":
            raise ApiError(409, "Conflict", "changed")
        if name == "broken":
            raise ApiError(500, "InternalError", "boom")
        return {"metadata": {"name": name}}

    seen: list[str] = []
    with pytest.raises(ApiError) as e:
        NodeWrites().each(
            write, ["a", "conflict", "broken", "b", "c"], lambda n, _o: seen.append(n)
        )
    assert e.value.status == 500
    assert seen == ["a", "b", "c"], "every write that succeeded is observed; a 409 is left out"


def test_background_writes_are_bounded_skip_what_is_queued_and_never_hold_the_caller() -> None:
    gate, seen, written = threading.Event(), [], []

    def write(item: str) -> Obj:
        gate.wait(10)
        if item == "gone":
            raise ApiError(409, "Conflict", "changed")
        written.append(item)
        return {"metadata": {"name": item}}

    writes = NodeWrites()
    many = [f"n{i:02d}" for i in range(QUEUED + 5)]
    assert not writes.later(str, write, ["gone", *many], lambda _i, obj: seen.append(obj))
    assert writes.queued() == {"gone", *many[: QUEUED - 1]}, "the rest wait for a later pass"
    assert written == [], "the caller went on while the writes wait"
    gate.set()
    assert writes.drained(10)
    assert sorted(written) == many[: QUEUED - 1] and len(seen) == QUEUED - 1
    assert writes.later(str, write, many[QUEUED - 1 :], lambda _i, obj: seen.append(obj))
    assert writes.drained(10) and sorted(written) == many


def test_the_controller_taints_in_the_background_the_nodes_the_rollout_reaches_last_first() -> None:
    old = render("worker", [mc("00-worker")])
    p = pool(maxUnavailable=1, configuration={"name": old.name})
    nodes = [versioned(node(f"n{i:02d}", old.name), str(10 + i)) for i in range(QUEUED + 4)]
    configs = {"00-worker": mc("00-worker"), "50-new": mc("50-new", kernelArguments=["b=2"]),
               old.name: {"metadata": {"name": old.name}, "spec": old.spec}}  # fmt: skip
    writer = Writer()
    writer.pools["worker"] = p
    syncer = Syncer(writer, "0.1.0", clock=lambda: NOW, background_taints=True)  # type: ignore[arg-type]
    syncer.sync_all(Snapshot([p], configs, nodes))
    assert syncer._writes.drained(10)
    ((first, _),) = writer.of("desired")
    tainted = [name for name, _t in writer.of("taints")]
    assert first == "n00" and "n00" not in tainted
    assert sorted(tainted) == [f"n{i:02d}" for i in range(4, QUEUED + 4)], (
        "the last in the rollout's order first, QUEUED at most"
    )
    assert syncer.taints.left("worker") == 3, "the rest for the passes that only refill"
    assert syncer.pending == set(), "no whole pass asked for them"
    syncer.taints.more(writer.pools["worker"], {n["metadata"]["name"]: n for n in nodes}.get)
    assert syncer._writes.drained(10)
    again = [name for name, _t in writer.of("taints")][len(tainted) :]
    assert sorted(again) == [f"n{i:02d}" for i in range(1, 4)], "the next in the same order"
    assert syncer.taints.left("worker") == 0


def test_a_background_write_refused_for_good_is_not_retried_every_pass() -> None:
    calls: list[str] = []

    def write(item: str) -> Obj:
        calls.append(item)
        raise ApiError(403, "Forbidden", "nodes is forbidden")

    writes = NodeWrites()
    writes.later(str, write, ["a"], lambda _i, _o: None)
    assert writes.drained(10)
    assert writes.later(str, write, ["a", "b"], lambda _i, _o: None), "nothing left pending"
    assert writes.drained(10) and calls == ["a"], "none queued while the refusal is recent"
