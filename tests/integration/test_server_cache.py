"""``mcd server`` from its watch caches: once synced, a request reads nothing from the API
server (the fake's request log); a config change and a revoked token are seen at once (a
real kube-apiserver too); the body is built once and reused until an input changes."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from mcd.cluster.configs import MACHINECONFIGS
from mcd.cluster.pools import POOLS
from mcd.model.ignition.dataurl import decode_data_url
from mcd.model.ignition.served import NODE_ANNOTATIONS
from mcd.server.caches import CachedSource
from mcd.server.handler import Handler, Response
from mcd.server.tokens import JOINED_WITH, Issued, issue
from mcd.server.tokenstore import TokenStore
from tests.fakes.kubecluster import TestCluster
from tests.integration.test_server_ignition import (
    IGN33,
    Served,
    make_pool,
    rendered,
    start_server,
)
from tests.patience import patient

pytestmark = pytest.mark.cluster


def wait_for(check: Callable[[], bool], what: str, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + patient(seconds)
    while not check():
        assert time.monotonic() < deadline, f"not within {seconds}s: {what}"
        time.sleep(0.05)


def annotations_of(body: bytes) -> dict[str, str]:
    doc = json.loads(body)
    (entry,) = [f for f in doc["storage"]["files"] if f["path"] == NODE_ANNOTATIONS]
    found: dict[str, str] = json.loads(decode_data_url(entry["contents"]["source"]))
    return found


def served_config(body: bytes) -> str:
    return annotations_of(body)["machineconfiguration.openshift.io/currentConfig"]


def new_token(cluster: TestCluster, namespace: str, pool: str, uses: int = 1) -> Issued:
    issued = issue("", pool, timedelta(hours=1), datetime.now(UTC), uses)
    TokenStore(cluster.kube, namespace).create(issued)
    return issued


@pytest.fixture
def cached(kube_cluster: TestCluster) -> Iterator[tuple[CachedSource, str, str]]:
    """A synced :class:`CachedSource` in this process (namespace, pool), stopped after."""
    namespace = kube_cluster.namespace("mcs")
    pool = make_pool(kube_cluster, "cached")
    source = CachedSource(kube_cluster.kube, namespace, token_namespace=namespace)
    stop = threading.Event()
    try:
        assert source.start(stop)
        yield source, namespace, pool
    finally:
        stop.set()


def get(handler: Handler, pool: str, token: str = "") -> Response:
    headers = {"Accept": IGN33, **({"Authorization": f"Bearer {token}"} if token else {})}
    return handler.respond("GET", f"/config/{pool}", headers, "127.0.0.1")


@pytest.mark.fake_too("the request log is the fake API server's")
def test_after_sync_requests_read_nothing_from_the_api_server(
    kube_cluster: TestCluster, cached: tuple[CachedSource, str, str]
) -> None:
    source, namespace, pool = cached
    plain = Handler(source)
    store = TokenStore(kube_cluster.kube, namespace, source.token_secret)
    with_tokens = Handler(source, store)
    issued = new_token(kube_cluster, namespace, pool, uses=3)
    wait_for(lambda: source.token_secret(issued.token_id) is not None, "the token in the cache")
    first = get(plain, pool)
    assert first.status == 200
    fake = kube_cluster.fake
    if fake is not None:
        fake.reset_log()
    for _ in range(20):
        r = get(plain, pool)
        assert (r.status, r.body) == (200, first.body)
    assert plain.prepared.builds == 1  # built once, 21 requests served
    r = get(with_tokens, pool, issued.token)
    assert r.status == 200
    assert annotations_of(r.body)[JOINED_WITH].startswith(issued.token_id + ".")
    if fake is not None:
        assert fake.count("GET", watch=False) == 0, [
            (q.method, q.path) for q in fake.requests if not q.watch
        ]
        assert fake.count("PUT", f"/api/v1/namespaces/{namespace}/secrets/") == 1


def test_a_config_change_is_served_at_once_and_a_revoked_token_refused(
    kube_cluster: TestCluster, tmp_path: Path
) -> None:
    namespace = kube_cluster.namespace("mcs")
    pool = make_pool(kube_cluster, "changing")
    with start_server(kube_cluster, tmp_path, namespace, pool=pool) as served:
        poller = new_token(kube_cluster, namespace, pool, uses=200)
        polls = {"left": 200}

        def config() -> str:
            assert polls["left"] > 0, "the poller's uses ran out"
            polls["left"] -= 1
            status, body = served.get(
                f"/config/{pool}", {"Authorization": f"Bearer {poller.token}", "Accept": IGN33}
            )
            assert status == 200, served.log.read_text()
            return served_config(body)

        wait_for(lambda: config() == f"rendered-{pool}-1", "the first config served")
        second = f"rendered-{pool}-2"
        kube_cluster.create(MACHINECONFIGS, _renamed(rendered(second)))
        kube_cluster.kube.request(
            "PATCH", f"{POOLS}/{pool}", body={"spec": {"configuration": {"name": second}}},
            content_type="application/merge-patch+json",
        )  # fmt: skip
        kube_cluster.kube.request(
            "PATCH", f"{POOLS}/{pool}/status", body={"status": {"updatedMachineCount": 1}},
            content_type="application/merge-patch+json",
        )  # fmt: skip
        wait_for(lambda: config() == second, "the new config served", 20)
        _revoked_token_is_refused(kube_cluster, served, namespace, pool)


def _renamed(mc: dict[str, Any]) -> dict[str, Any]:
    mc["spec"]["config"]["storage"]["files"][0]["path"] = "/etc/mcd-joined-2"
    return mc


def _revoked_token_is_refused(
    cluster: TestCluster, served: Served, namespace: str, pool: str
) -> None:
    store = TokenStore(cluster.kube, namespace)
    doomed = new_token(cluster, namespace, pool, uses=2)
    headers = {"Authorization": f"Bearer {doomed.token}", "Accept": IGN33}
    assert served.get(f"/config/{pool}", headers)[0] == 200
    store.revoke(doomed.token_id)
    assert served.get(f"/config/{pool}", headers) == (403, b"")  # at once: no wait
    log = served.log.read_text()
    assert f"Refused pool {pool!r}" in log and f"join token {doomed.token_id}" in log
    assert doomed.token not in log
