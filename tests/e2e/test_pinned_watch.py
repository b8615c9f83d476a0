"""Pinning reacts to a change, not to the resync poll: with the poll at 5 minutes, a changed
PinnedImageSet is pulled and pinned within seconds, because the agent watches the
PinnedImageSets and MachineConfigPools (as upstream's informers)."""

from __future__ import annotations

import time
from pathlib import Path

from tests.e2e.conftest import NodeFactory
from tests.e2e.scenarios import boot_on
from tests.e2e.test_pinned_images import (  # _crds: the CRDs on a real cluster
    IMAGE_A,
    IMAGE_B,
    IMAGE_C,
    _bump,
    _crds,  # noqa: F401
    _setup,
    _wait_sets,
)
from tests.fakes import cri
from tests.fakes.kubecluster import TestCluster


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
    assert took < 10, f"acted on after {took:.1f}s: the watch did not wake the sync"
    assert IMAGE_C in {p["image"] for p in cri.load(state)["pulls"]}
