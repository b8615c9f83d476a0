"""The running controller prunes the rendered configs nothing uses once older than
``--prune-grace`` (issue 30), on a live API server (the fake, or the real kube-apiserver).
No agents run: the test plays their annotations."""

from __future__ import annotations

import time
from pathlib import Path

from mcd.cluster.configs import MACHINECONFIGS
from mcd.model.pool.history import HISTORY_ANNOTATION, parse_history
from mcd.model.pool.render import GENERATED_BY
from tests.e2e.configs import worker
from tests.e2e.controller_harness import (
    ControllerProc,
    create_pool,
    get_pool,
    label_node,
    machine_config,
    pool,
    target,
    wait,
)
from tests.e2e.test_controller import (  # noqa: F401 - the CRD fixture
    BASE,
    _crds,
    play_agent,
)
from tests.fakes.kubecluster import TestCluster


def names(cluster: TestCluster) -> set[str]:
    return {m["metadata"]["name"] for m in cluster.kube.request("GET", MACHINECONFIGS)["items"]}


def orphan(cluster: TestCluster, name: str) -> None:
    doc = machine_config(name, "worker", BASE)
    doc["metadata"]["annotations"] = {GENERATED_BY: "test"}
    doc["metadata"]["labels"] = {}  # no pool selects it
    cluster.create(MACHINECONFIGS, doc)


def test_the_controller_prunes_an_old_orphan_and_keeps_what_is_used_or_young(
    kube_cluster: TestCluster, tmp_path: Path
) -> None:
    cluster = kube_cluster
    ns = cluster.namespace("ctl")
    cluster.create(MACHINECONFIGS, machine_config("00-worker", "worker", BASE))
    create_pool(cluster, pool("worker", ["worker"], "worker", 1))
    ctl = ControllerProc(cluster, tmp_path, "a", ns).start(
        "--prune-grace", "15s", "--prune-interval", "1"
    )
    try:
        wait(lambda: target(cluster, "worker") != "", 30, "rendered", ctl.log)
        first = target(cluster, "worker")
        node = cluster.node("w0")
        label_node(cluster, node, "worker")
        play_agent(cluster, node, first)
        app = machine_config("50-app", "worker", worker("app", app="threads=8\n"))
        cluster.create(MACHINECONFIGS, app)
        wait(lambda: target(cluster, "worker") != first, 30, "re-rendered", ctl.log)
        second = target(cluster, "worker")  # first: the node's current and a revision
        orphan(cluster, "rendered-worker-old")
        orphan(cluster, "worker-unnamed")  # mcd's mark but not a rendered name: never pruned
        wait(lambda: "rendered-worker-old" not in names(cluster), 60, "pruned", ctl.log)
        gone_at = time.monotonic()
        orphan(cluster, "rendered-worker-young")
        time.sleep(3)  # three prunes, all inside the young one's grace
        left = names(cluster)
        # creationTimestamp has whole seconds: the grace may end up to 1 s early; a loaded
        # machine gets 11 s of headroom before this check would mean nothing
        assert time.monotonic() - gone_at < 13
        assert {first, second, "00-worker", "50-app", "worker-unnamed",
                "rendered-worker-young"} <= left  # fmt: skip
        wait(lambda: "rendered-worker-young" not in names(cluster), 60, "young pruned", ctl.log)
        time.sleep(2)
        assert {first, second, "00-worker", "50-app", "worker-unnamed"} <= names(cluster)
        history = get_pool(cluster, "worker")["metadata"]["annotations"][HISTORY_ANNOTATION]
        assert [r.config for r in parse_history(history)] == [first, second]
        assert "Pruned rendered config rendered-worker-old: no node, pool or revision" in ctl.log()
    finally:
        assert ctl.stop() == 0, ctl.log()[-3000:]


def test_prune_grace_zero_prunes_nothing(kube_cluster: TestCluster, tmp_path: Path) -> None:
    cluster = kube_cluster
    ns = cluster.namespace("ctl")
    cluster.create(MACHINECONFIGS, machine_config("00-worker", "worker", BASE))
    create_pool(cluster, pool("worker", ["worker"], "worker", 1))
    orphan(cluster, "rendered-worker-old")
    time.sleep(1.1)
    ctl = ControllerProc(cluster, tmp_path, "a", ns).start(
        "--prune-grace", "0", "--prune-interval", "1"
    )
    try:
        wait(lambda: target(cluster, "worker") != "", 30, "rendered", ctl.log)
        time.sleep(3)
        assert "rendered-worker-old" in names(cluster)
    finally:
        assert ctl.stop() == 0, ctl.log()[-3000:]
