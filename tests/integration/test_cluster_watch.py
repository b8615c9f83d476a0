"""The Node watch and the annotation writer against the API server (fake, or MCD_TEST_KUBECONFIG)."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from mcd.cluster.api import Obj
from mcd.cluster.node import NodeWriter, annotations_of
from mcd.cluster.watch import Backoff, NodeWatch
from mcd.model.vocabulary import REASON_LIMIT, Annotation
from tests.fakes.apiserver import FakeApiServer
from tests.fakes.kubecluster import TestCluster, eventually

DESIRED = Annotation.DESIRED_CONFIG


class Seen:
    def __init__(self) -> None:
        self.versions: list[Obj] = []
        self.lock = threading.Lock()

    def __call__(self, node: Obj) -> None:
        with self.lock:
            self.versions.append(node)

    def desired(self) -> list[str]:
        with self.lock:
            return [annotations_of(n).get(DESIRED, "") for n in self.versions]

    def last_desired(self) -> str:
        values = self.desired()
        return values[-1] if values else ""


@contextmanager
def watching(
    cluster: TestCluster, node: str, seen: Seen, watch_seconds: int = 30
) -> Iterator[NodeWatch]:
    watch = NodeWatch(
        cluster.kube, node, seen, watch_seconds=watch_seconds, backoff=Backoff(0.05, 0.5)
    )
    stop = threading.Event()
    thread = threading.Thread(target=watch.run, args=(stop,), daemon=True)
    thread.start()
    try:
        yield watch
    finally:
        stop.set()
        thread.join(40)


def test_watch_sees_every_annotation_change_of_its_node_only(kube_cluster: TestCluster) -> None:
    node, other = kube_cluster.node("worker"), kube_cluster.node("other")
    seen = Seen()
    # short watch requests: stopping waits for the open one to end (a real server holds it
    # open until its timeout); each new one resumes at the last version seen
    with watching(kube_cluster, node, seen, watch_seconds=3):
        assert eventually(lambda: len(seen.versions) >= 1)
        for i in range(1, 6):
            kube_cluster.annotate(node, {DESIRED: f"rendered-worker-{i}"})
            kube_cluster.annotate(other, {DESIRED: f"other-{i}"})
        assert eventually(lambda: seen.last_desired() == "rendered-worker-5")
    # What a watch promises: every change of the Node, in order. Other writers (a kubelet's
    # status heartbeats on a real cluster) make versions that repeat the annotation: a value
    # may come several times in a row, but none is missed, reordered or comes back.
    values = [v for v, _ in itertools.groupby(seen.desired())]
    assert values == ["", *(f"rendered-worker-{i}" for i in range(1, 6))]
    assert all(n["metadata"]["name"] == node for n in seen.versions)


@pytest.mark.fake_only(
    "drops the watches, compacts the history (410 Gone), restarts the server and fails LISTs with 500"
)
def test_watch_survives_drops_410_and_restart_without_missing_the_last_desired(
    kube_cluster: TestCluster, fake_api: FakeApiServer
) -> None:
    node = kube_cluster.node("worker")
    seen = Seen()
    with watching(kube_cluster, node, seen) as watch:
        assert eventually(lambda: len(seen.versions) >= 1)
        kube_cluster.annotate(node, {DESIRED: "rendered-worker-1"})
        assert eventually(lambda: seen.last_desired() == "rendered-worker-1")
        fake_api.drop_watches()
        kube_cluster.annotate(node, {DESIRED: "rendered-worker-2"})  # while the watch is down
        assert eventually(lambda: seen.last_desired() == "rendered-worker-2")
        fake_api.store.compact()  # history gone: the resume answers 410 Gone
        kube_cluster.annotate(node, {DESIRED: "rendered-worker-3"})
        fake_api.drop_watches()
        assert eventually(lambda: seen.last_desired() == "rendered-worker-3")
        assert watch.relists >= 2
        fake_api.restart(compact=True)
        kube_cluster.annotate(node, {DESIRED: "rendered-worker-4"})
        fake_api.fail_next(2, 500, lambda m, p: m == "GET" and p == "/api/v1/nodes")
        assert eventually(lambda: seen.last_desired() == "rendered-worker-4", timeout=15)
    listed = [r for r in fake_api.requests if r.method == "GET" and r.path == "/api/v1/nodes"]
    assert all(r.query.get("fieldSelector") == f"metadata.name={node}" for r in listed)


@pytest.mark.fake_only("shortens the server's bookmark interval and reads its request log")
def test_watch_is_the_only_long_lived_request_and_uses_bookmarks(
    kube_cluster: TestCluster, fake_api: FakeApiServer
) -> None:
    fake_api.bookmark_interval = 0.2
    node = kube_cluster.node("worker")
    seen = Seen()
    with watching(kube_cluster, node, seen) as watch:
        assert eventually(lambda: len(seen.versions) >= 1)
        other = kube_cluster.node("other")
        kube_cluster.annotate(other, {DESIRED: "x"})
        before = int(watch.resource_version or 0)
        assert eventually(lambda: int(watch.resource_version or 0) > before, timeout=5)
    watches = [r for r in fake_api.requests if r.watch]
    assert watches and all(r.query.get("allowWatchBookmarks") == "true" for r in watches)


def test_writer_skips_no_op_writes_and_cuts_reason(kube_cluster: TestCluster) -> None:
    node = kube_cluster.node("worker")
    writer = NodeWriter(kube_cluster.kube, node)
    writer.set_annotations({Annotation.STATE: "Degraded", Annotation.REASON: "x" * 5000})
    sent = writer.patches  # 1, or 2 where a kubelet's status update raced it (a 409, redone)
    writer.set_annotations({Annotation.STATE: "Degraded", Annotation.REASON: "x" * 5000})
    assert writer.patches == sent  # nothing to change: no request
    got = annotations_of(kube_cluster.get_node(node))
    assert got[Annotation.STATE] == "Degraded"
    assert len(got[Annotation.REASON]) == REASON_LIMIT
    writer.set_annotations({Annotation.REASON: None})
    assert Annotation.REASON not in annotations_of(kube_cluster.get_node(node))


def test_concurrent_annotation_writes_end_consistent(kube_cluster: TestCluster) -> None:
    node = kube_cluster.node("worker")
    writers = [NodeWriter(kube_cluster.kube, node) for _ in range(4)]

    def work(i: int) -> None:
        for j in range(10):
            writers[i].set_annotations({f"test.mcd/w{i}": str(j), Annotation.STATE: "Working"})

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    got = annotations_of(kube_cluster.get_node(node))
    assert {k: v for k, v in got.items() if k.startswith("test.mcd/")} == {
        f"test.mcd/w{i}": "9" for i in range(4)
    }
    assert got[Annotation.STATE] == "Working"


@pytest.mark.fake_only("counts the 409 answers in the server's request log")
def test_writer_retries_a_conflict(kube_cluster: TestCluster, fake_api: FakeApiServer) -> None:
    node = kube_cluster.node("worker")
    writer = NodeWriter(kube_cluster.kube, node)
    real_get = writer.get
    calls = {"n": 0}

    def racing_get() -> Obj:
        current = real_get()
        if calls["n"] < 2:  # someone else writes between our read and our patch
            calls["n"] += 1
            kube_cluster.annotate(node, {"test.mcd/other": str(calls["n"])})
        return current

    writer.get = racing_get  # type: ignore[method-assign]
    writer.set_annotations({Annotation.STATE: "Done"})
    conflicts = [r for r in fake_api.requests if r.method == "PATCH" and r.status == 409]
    assert len(conflicts) == 2
    got = annotations_of(kube_cluster.get_node(node))
    assert got[Annotation.STATE] == "Done" and got["test.mcd/other"] == "2"


def test_a_resumed_watch_is_live_before_its_first_event(kube_cluster: TestCluster) -> None:
    """An idle agent's resync trusts a watch the server accepted: on a real kube-apiserver a
    field-selected watch's first bookmark comes about 120 s after it opened (measured), and
    a watch counted dead until then made every resync after a reconnect read the Node."""
    node = kube_cluster.node("worker")
    seen = Seen()
    with watching(kube_cluster, node, seen, watch_seconds=30) as watch:
        assert eventually(lambda: bool(seen.versions and watch.resource_version), timeout=10)
        assert eventually(watch.live, timeout=10), "accepted, no event yet: live"


class _Opened:
    """A Kube whose watch is accepted and then says nothing (an idle Node)."""

    def __init__(self, listing_version: str) -> None:
        self.listing_version = listing_version
        self.quiet = threading.Event()

    def request(self, method: str, path: str, query: object = None) -> Obj:
        return {"metadata": {"resourceVersion": self.listing_version}, "items": []}

    def stream(
        self, path: str, query: object, timeout: float, opened: object = None
    ) -> Iterator[Obj]:
        assert callable(opened)
        opened()
        self.quiet.wait(5)
        return iter(())


@pytest.mark.parametrize(("version", "live"), [("42", True), ("", False)])
def test_only_a_watch_resumed_from_a_version_is_live_without_events(
    version: str, live: bool
) -> None:
    """From a resourceVersion the server delivers every later change; from none (a listing
    without one) it starts from whatever it has: not trusted until an event comes."""
    kube = _Opened(version)
    watch = NodeWatch(kube, "worker", Seen(), backoff=Backoff(0.05, 0.5))  # type: ignore[arg-type]
    stop = threading.Event()
    thread = threading.Thread(target=watch.run, args=(stop,), daemon=True)
    thread.start()
    try:
        assert eventually(lambda: watch.resource_version is not None, timeout=5)
        time.sleep(0.2)
        assert watch.live() is live
    finally:
        stop.set()
        kube.quiet.set()
        thread.join(10)
