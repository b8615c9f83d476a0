"""Pinning reacts to a change, not to the resync poll: with the poll at 5 minutes, a changed
PinnedImageSet is pulled and pinned within seconds, because the agent watches the
PinnedImageSets and MachineConfigPools (as upstream's informers)."""

from __future__ import annotations

import time
from pathlib import Path

from mcd.cluster.api import USER_AGENT
from tests.e2e.conftest import NodeFactory
from tests.e2e.scenarios import boot_on
from tests.e2e.test_pinned_images import (  # _crds: the CRDs on a real cluster
    API,
    IMAGE_A,
    IMAGE_B,
    IMAGE_C,
    _bump,
    _crds,  # noqa: F401
    _setup,
    _wait_sets,
)
from tests.fakes import cri
from tests.fakes.apiserver import FakeApiServer
from tests.fakes.kubecluster import TestCluster
from tests.patience import patient


def test_a_changed_set_is_pinned_at_once_not_at_the_next_poll(
    make_node: NodeFactory, kube_cluster: TestCluster, tmp_path: Path
) -> None:
    node = make_node(fake_systemd=True)
    name, state, _pool = _setup(node, kube_cluster, tmp_path)
    node.base_env["MCD_PINNED_IMAGES_INTERVAL"] = "300"  # the resync poll: out of the picture
    boot_on(node, kube_cluster)
    _wait_sets(kube_cluster, node, [{"name": name, "desiredGeneration": 1,
                                     "currentGeneration": 1}], "set pinned at start")  # fmt: skip
    time.sleep(1.0)  # the watches are established (they list, then watch)

    started = time.monotonic()
    _bump(kube_cluster, name, [IMAGE_A, IMAGE_B, IMAGE_C])
    _wait_sets(kube_cluster, node, [{"name": name, "desiredGeneration": 2,
                                     "currentGeneration": 2}], "changed set pinned")  # fmt: skip
    took = time.monotonic() - started
    print(f"changed set pinned after {took:.2f}s (resync poll: 300s)")
    assert took < patient(10), f"acted on after {took:.1f}s: the watch did not wake the sync"
    assert IMAGE_C in {p["image"] for p in cri.load(state)["pulls"]}


def test_an_idle_agents_resyncs_read_the_pool_and_its_sets_from_the_watches(
    make_node: NodeFactory, kube_cluster: TestCluster, fake_api: FakeApiServer, tmp_path: Path
) -> None:
    """Issue 31's idle footprint: with the watches up, a resync every half second reads the
    pool and its PinnedImageSets from their caches (no request), and still sees a change."""
    node = make_node(fake_systemd=True)
    name, state, pool = _setup(node, kube_cluster, tmp_path)
    node.base_env["MCD_PINNED_IMAGES_INTERVAL"] = "0.5"
    boot_on(node, kube_cluster)
    _wait_sets(kube_cluster, node, [{"name": name, "desiredGeneration": 1,
                                     "currentGeneration": 1}], "set pinned at start")  # fmt: skip
    time.sleep(1.0)  # the watches have listed
    wanted = {f"{API}/machineconfigpools/{pool}", f"{API}/pinnedimagesets/{name}"}

    def reads() -> int:
        return sum(1 for r in list(fake_api.requests)
                   if r.method == "GET" and r.path in wanted and r.user_agent.startswith(USER_AGENT))  # fmt: skip

    before = reads()
    time.sleep(3)  # six resyncs
    assert reads() == before
    _bump(kube_cluster, name, [IMAGE_A, IMAGE_B, IMAGE_C])
    _wait_sets(kube_cluster, node, [{"name": name, "desiredGeneration": 2,
                                     "currentGeneration": 2}], "changed set pinned")  # fmt: skip
    assert IMAGE_C in {p["image"] for p in cri.load(state)["pulls"]}
    assert reads() == before
