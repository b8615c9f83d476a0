"""Prune is fail safe on a live API server (issue 41, item 7): a pool whose rollout history
cannot be read (malformed after a hand edit, or over 16 KiB) keeps every rendered config of
its own, through ``mcd prune --apply`` and through the controller's auto-prune, each saying
so in one line; the controller's render leaves that history as it is."""

from __future__ import annotations

import json
import time
from pathlib import Path

from mcd.cluster.configs import MACHINECONFIGS
from mcd.model.pool.history import HISTORY_ANNOTATION
from mcd.model.pool.render import GENERATED_BY
from tests.e2e.controller_harness import (
    ControllerProc,
    create_pool,
    get_pool,
    machine_config,
    pool,
    target,
    wait,
)
from tests.e2e.test_controller import BASE, _crds  # noqa: F401 - the CRD fixture
from tests.e2e.test_rollback import mcd
from tests.fakes.kubecluster import TestCluster

HAND_EDITED = '[{"revision": 1, "config": "rendered-worker-kept", "time": "t"'  # a lost ]}
OVERSIZED = json.dumps([{"revision": i, "config": f"rendered-infra-{i}", "change": "x" * 2000}
                        for i in range(9)])  # fmt: skip


def names(cluster: TestCluster) -> set[str]:
    return {m["metadata"]["name"] for m in cluster.kube.request("GET", MACHINECONFIGS)["items"]}


def orphan(cluster: TestCluster, name: str) -> None:
    doc = machine_config(name, "worker", BASE)
    doc["metadata"]["annotations"] = {GENERATED_BY: "test"}
    doc["metadata"]["labels"] = {}  # no pool selects it
    cluster.create(MACHINECONFIGS, doc)


def test_prune_apply_keeps_every_rendered_config_of_a_pool_whose_history_is_unreadable(
    kube_cluster: TestCluster,
) -> None:
    cluster = kube_cluster
    create_pool(cluster, pool("worker", ["worker"], "worker",
                              annotations={HISTORY_ANNOTATION: HAND_EDITED}))  # fmt: skip
    create_pool(cluster, pool("infra", ["infra"], "infra",
                              annotations={HISTORY_ANNOTATION: OVERSIZED}))  # fmt: skip
    create_pool(cluster, pool("edge", ["edge"], "edge"))
    for name in ("rendered-worker-kept", "rendered-worker-other", "rendered-infra-3",
                 "rendered-edge-orphan"):  # fmt: skip
        orphan(cluster, name)
    time.sleep(1.1)
    done = mcd(cluster, "prune", "--grace", "1s", "--apply")
    assert done.returncode == 0, done.stderr
    warnings = done.stderr.splitlines()
    assert warnings == [
        f"warning: pool infra: {HISTORY_ANNOTATION} is over 16384 characters "
        f"({len(OVERSIZED)}): it may name a rendered config kept for a rollback, so none of "
        "pool infra's rendered configs is pruned (fix or remove the annotation to prune)",
        f"warning: pool worker: {HISTORY_ANNOTATION} is not valid JSON: it may name a rendered "
        "config kept for a rollback, so none of pool worker's rendered configs is pruned (fix "
        "or remove the annotation to prune)",
    ]
    assert done.stdout.splitlines()[0] == "deleted: rendered-edge-orphan"
    assert "1 rendered configs deleted; 3 kept" in done.stdout
    assert "or of a pool whose history cannot be read" in done.stdout
    left = names(cluster)
    assert {"rendered-worker-kept", "rendered-worker-other", "rendered-infra-3"} <= left
    assert "rendered-edge-orphan" not in left


def test_the_controller_prunes_none_of_a_pool_whose_history_is_unreadable(
    kube_cluster: TestCluster, tmp_path: Path
) -> None:
    cluster = kube_cluster
    ns = cluster.namespace("ctl")
    cluster.create(MACHINECONFIGS, machine_config("00-worker", "worker", BASE))
    create_pool(cluster, pool("worker", ["worker"], "worker",
                              annotations={HISTORY_ANNOTATION: HAND_EDITED}))  # fmt: skip
    orphan(cluster, "rendered-worker-kept")  # only the unreadable history names it
    orphan(cluster, "rendered-gone-orphan")  # no pool's: it goes
    ctl = ControllerProc(cluster, tmp_path, "a", ns).start(
        "--prune-grace", "1s", "--prune-interval", "1"
    )
    try:
        wait(lambda: target(cluster, "worker") != "", 30, "rendered", ctl.log)
        wait(lambda: "rendered-gone-orphan" not in names(cluster), 60, "pruned", ctl.log)
        line = (f"pool worker: {HISTORY_ANNOTATION} is not valid JSON: it may name a rendered "
                "config kept for a rollback, so none of pool worker's rendered configs is pruned")  # fmt: skip
        wait(lambda: line in ctl.log(), 30, "the prune says why", ctl.log)
        time.sleep(2)  # two more prunes
        assert {"rendered-worker-kept", target(cluster, "worker")} <= names(cluster)
        annotations = get_pool(cluster, "worker")["metadata"]["annotations"]
        assert annotations[HISTORY_ANNOTATION] == HAND_EDITED  # the render left it
    finally:
        assert ctl.stop() == 0, ctl.log()[-3000:]
