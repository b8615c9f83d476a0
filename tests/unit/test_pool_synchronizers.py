"""A pool's ``status.poolSynchronizersStatus`` for PinnedImageSets (upstream's node controller
``poolSynchronizer``): counted from the members' MachineConfigNodes, written through the
controller's pass only for pools that name sets, removed when a pool stops naming any,
MachineConfigNodes listed at most every ``FRESH`` seconds, and upstream's CRD rules hold."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from mcd.cluster.api import ApiError
from mcd.controller.conditions.synchronizers import (
    FIELD,
    FRESH,
    PinnedRollup,
    pinned_everywhere,
    synchronizer_status,
)
from mcd.controller.sync import Snapshot, Syncer
from tests.unit.test_controller_sync import NOW, Writer
from tests.unit.test_pool_hygiene import node, pool, role

Obj = dict[str, Any]


def mcn(name: str, *entries: Obj) -> Obj:
    return {"metadata": {"name": name}, "status": {"pinnedImageSets": list(entries)}}


def done(name: str, generation: int = 1) -> Obj:
    return {"name": name, "desiredGeneration": generation, "currentGeneration": generation}


def failed(name: str, generation: int = 2) -> Obj:
    return {"name": name, "desiredGeneration": generation, "currentGeneration": generation - 1,
            "lastFailedGeneration": generation, "lastFailedGenerationError": "pull failed"}  # fmt: skip


class Kube:
    def __init__(self, items: list[Obj], error: int = 0) -> None:
        self.items, self.error, self.lists = items, error, 0

    def request(self, method: str, path: str, *args: Any, **kwargs: Any) -> Obj:
        if path.endswith("/controllerconfigs/machine-config-controller"):
            raise ApiError(404, "NotFound", "no ControllerConfig (plain Kubernetes)")
        assert (method, path) == (
            "GET",
            "/apis/machineconfiguration.openshift.io/v1/machineconfignodes",
        )
        self.lists += 1
        if self.error:
            raise ApiError(self.error, "Error", "listing refused")
        return {"items": self.items}


class KubeWriter(Writer):
    def __init__(self, kube: Kube) -> None:
        super().__init__()
        self.kube = kube


def pinned_pool(*sets: str, status: Obj | None = None) -> Obj:
    out = pool("infra", role("infra"), roles=("worker", "infra"))
    out["spec"]["pinnedImageSets"] = [{"name": s} for s in sets]
    if status is not None:
        out["status"] = status
    return out


def one_pass(writer: Writer, p: Obj, nodes: list[Obj], rollup: PinnedRollup | None = None) -> Obj:
    writer.pools = {"infra": p}
    syncer = Syncer(writer, "0.1.0", clock=lambda: NOW)  # type: ignore[arg-type]
    if rollup is not None:
        syncer.pinned = rollup
    syncer.sync_all(Snapshot([p], {}, nodes))
    return dict(writer.of("status")).get("infra") or {}


NODES = [node(f"i{i}", "", "worker", "infra") for i in range(3)]


def test_the_pass_writes_how_many_members_pinned_every_set() -> None:
    kube = Kube([mcn("i0", done("a"), done("b")), mcn("i1", done("a"), failed("b")),
                 mcn("i2"), mcn("elsewhere", done("a"), done("b"))])  # fmt: skip
    status = one_pass(KubeWriter(kube), pinned_pool("a", "b"), NODES)
    [sync] = status[FIELD]
    assert sync["poolSynchronizerType"] == "PinnedImageSets"
    assert (sync["machineCount"], sync["updatedMachineCount"]) == (3, 1)
    assert sync["availableMachineCount"] == 3 - sync["unavailableMachineCount"]
    assert sync["readyMachineCount"] == status["readyMachineCount"]


def test_a_pool_naming_no_set_lists_nothing_and_loses_the_field() -> None:
    kube = Kube([mcn("i0", done("a"))])
    status = one_pass(KubeWriter(kube), pinned_pool(), NODES)
    assert FIELD not in status and kube.lists == 0
    old = [{"poolSynchronizerType": "PinnedImageSets", "machineCount": 3,
            "updatedMachineCount": 3, "readyMachineCount": 3, "unavailableMachineCount": 0,
            "availableMachineCount": 3}]  # fmt: skip
    status = one_pass(KubeWriter(kube), pinned_pool(status={FIELD: old}), NODES)
    assert status[FIELD] is None, "null in the merge patch: the field is removed"
    assert kube.lists == 0


def test_machineconfignodes_are_listed_at_most_every_fresh_seconds() -> None:
    kube = Kube([mcn("i0", done("a"))])
    now = [0.0]
    rollup = PinnedRollup(clock=lambda: now[0])
    writer = KubeWriter(kube)
    for t in (0.0, FRESH - 1, FRESH + 1):
        now[0] = t
        one_pass(writer, pinned_pool("a"), NODES, rollup)
    assert kube.lists == 2


def test_no_machineconfignode_api_counts_nobody_and_a_refused_listing_keeps_the_field() -> None:
    status = one_pass(KubeWriter(Kube([], error=404)), pinned_pool("a"), NODES)
    assert status[FIELD][0]["updatedMachineCount"] == 0
    writer = KubeWriter(Kube([], error=403))
    status = one_pass(writer, pinned_pool("a"), NODES)
    assert FIELD not in status  # left as it is on the server
    assert status["machineCount"] == 3, "the pool's own status is still written"


def test_a_node_counts_only_once_each_named_set_is_at_its_desired_generation() -> None:
    assert pinned_everywhere(["a"], mcn("n", done("a", 3)))
    assert not pinned_everywhere(["a"], mcn("n"))  # upstream counts it; nothing pinned yet
    assert not pinned_everywhere(["a"], None)
    assert not pinned_everywhere(["a"], mcn("n", failed("a")))
    assert not pinned_everywhere(["a"], mcn("n", {"name": "a", "desiredGeneration": 0,
                                                  "currentGeneration": 0}))  # fmt: skip
    assert not pinned_everywhere(["a", "b"], mcn("n", done("a")))


entry = st.fixed_dictionaries({
    "name": st.sampled_from(["a", "b", "c"]),
    "desiredGeneration": st.integers(0, 3),
    "currentGeneration": st.integers(0, 3),
})  # fmt: skip


@given(
    sets=st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=3, unique=True),
    members=st.lists(st.lists(entry, max_size=4) | st.none(), max_size=8),
    ready=st.integers(0, 12),
    unavailable=st.integers(0, 12),
)
def test_the_counts_keep_upstreams_crd_rules(
    sets: list[str], members: list[list[Obj] | None], ready: int, unavailable: int
) -> None:
    names = [f"n{i}" for i in range(len(members))]
    mcns = {n: mcn(n, *m) for n, m in zip(names, members, strict=True) if m is not None}
    status = {"readyMachineCount": ready, "unavailableMachineCount": unavailable}
    [s] = synchronizer_status(sets, names, mcns, status)
    assert s["machineCount"] == len(members)
    for key in ("updatedMachineCount", "availableMachineCount", "unavailableMachineCount",
                "readyMachineCount"):  # fmt: skip
        assert 0 <= s[key] <= s["machineCount"], key
    assert s["availableMachineCount"] >= s["readyMachineCount"]
    assert s["availableMachineCount"] + s["unavailableMachineCount"] == s["machineCount"]
