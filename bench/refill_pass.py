"""The controller's passes over one big pool, in process: ``python -m bench.refill_pass [N]``
(not part of ``make test``; ``docs/scale.md``, "25,000 nodes").

A pool of N (10,000) Nodes mid-rollout (a third on the target, a tenth updating, the rest
waiting), the Nodes trimmed as the controller's informer keeps them: the CPU of one whole
pass (:meth:`mcd.controller.sync.Syncer.sync_all`), then of passes after 50 nodes Done each
(:meth:`~mcd.controller.sync.Syncer.refill_pass`, which hands out the 50 freed slots); writes
answer at once in process. A refill pass should cost the same at 10,000 and 25,000 nodes.
"""

from __future__ import annotations

import copy
import sys
import time
from typing import Any

from mcd.cluster.pools import node_fields
from mcd.controller.sync import Snapshot, Syncer
from mcd.model.pool.render import render
from mcd.model.vocabulary import Annotation
from tests.unit.test_controller_sync import NOW, Writer, mc, pool

Obj = dict[str, Any]
DONE_PER_PASS = 50
PASSES = 10


def fleet_node(i: int, desired: str, current: str) -> Obj:
    state = "Done" if current == desired else "Working"
    annotations = {str(Annotation.CURRENT_CONFIG): current, str(Annotation.STATE): state,
                   str(Annotation.DESIRED_CONFIG): desired}  # fmt: skip
    return node_fields({
        "metadata": {"name": f"fleet-{i:05d}", "uid": f"u{i}", "resourceVersion": str(1000 + i),
                     "creationTimestamp": "2026-01-01T00:00:00Z",
                     "labels": {"node-role.kubernetes.io/worker": ""}, "annotations": annotations},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    })  # fmt: skip


class Cache(Writer):
    """The API server and the informer's cache in one: a write lands in ``nodes``."""

    def __init__(self, nodes: dict[str, Obj]) -> None:
        super().__init__()
        self.nodes = nodes

    def _bumped(self, node: str) -> Obj:
        obj = copy.deepcopy(self.nodes[node])
        obj["metadata"]["resourceVersion"] = str(int(obj["metadata"]["resourceVersion"]) + 10**6)
        return obj

    def set_desired(
        self, node: str, config: str, taints: list[Any] | None = None, resource_version: str = ""
    ) -> Obj:
        obj = self._bumped(node)
        obj["metadata"]["annotations"][str(Annotation.DESIRED_CONFIG)] = config
        return obj

    def set_taints(self, node: str, taints: list[Any], resource_version: str) -> Obj:
        obj = self._bumped(node)
        obj.setdefault("spec", {})["taints"] = taints
        return obj

    def observe(self, obj: Obj) -> None:
        self.nodes[obj["metadata"]["name"]] = obj

    def done(self, node: str) -> None:
        obj = self._bumped(node)
        a = obj["metadata"]["annotations"]
        a[str(Annotation.CURRENT_CONFIG)] = a[str(Annotation.DESIRED_CONFIG)]
        a[str(Annotation.STATE)] = "Done"
        self.nodes[node] = obj


def measure(n: int) -> tuple[float, float, int]:
    """(CPU of a whole pass, CPU of a pass after 50 nodes Done, targets those handed out)."""
    old = render("worker", [mc("00-worker")])
    new = render("worker", [mc("00-worker"), mc("50-new", kernelArguments=["b=2"])])
    configs = {"00-worker": mc("00-worker"), "50-new": mc("50-new", kernelArguments=["b=2"]),
               old.name: {"metadata": {"name": old.name}, "spec": old.spec},
               new.name: {"metadata": {"name": new.name}, "spec": new.spec}}  # fmt: skip
    nodes = {}
    for i in range(n):
        on, moving = i < n // 3, n // 3 <= i < n // 3 + n // 10
        obj = fleet_node(i, new.name if on or moving else old.name,
                         new.name if on else old.name)  # fmt: skip
        nodes[obj["metadata"]["name"]] = obj
    cache = Cache(nodes)
    cache.pools["worker"] = pool(maxUnavailable="10%", configuration={"name": new.name})
    syncer = Syncer(cache, "0.1.0", clock=lambda: NOW, observe_node=cache.observe,  # type: ignore[arg-type]
                    background_targets=True, background_taints=True)  # fmt: skip
    syncer._writes.soon = lambda job: job()  # type: ignore[method-assign]

    def whole() -> None:
        snap = Snapshot([cache.pools["worker"]], configs, list(nodes.values()),
                        taken=time.monotonic())  # fmt: skip
        syncer.sync_all(snap)

    whole()
    began = time.process_time()
    for _ in range(3):
        whole()
    whole_cpu = (time.process_time() - began) / 3
    current, desired = str(Annotation.CURRENT_CONFIG), str(Annotation.DESIRED_CONFIG)
    updating = [name for name, o in nodes.items()
                if o["metadata"]["annotations"][current] != new.name
                and o["metadata"]["annotations"][desired] == new.name]  # fmt: skip
    spent, targets = 0.0, 0
    for k in range(PASSES):
        changed = set(updating[k * DONE_PER_PASS : (k + 1) * DONE_PER_PASS])
        for name in changed:
            cache.done(name)
        began = time.process_time()
        reports = syncer.refill_pass([cache.pools["worker"]], changed, nodes.get, time.monotonic())
        spent += time.process_time() - began
        targets += sum(len(r.rollout.targets) for r in reports or [])
    assert syncer._writes.drained(30)
    return whole_cpu, spent / PASSES, targets


def main() -> None:
    for n in [int(a) for a in sys.argv[1:]] or [10_000]:
        whole_cpu, refill_cpu, targets = measure(n)
        print(f"{n} nodes: whole pass {whole_cpu * 1000:.1f} ms of CPU; a pass after "
              f"{DONE_PER_PASS} nodes Done {refill_cpu * 1000:.2f} ms ({targets} targets "
              f"in {PASSES} passes)")  # fmt: skip


if __name__ == "__main__":
    main()
