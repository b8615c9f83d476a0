"""Lease expiry as client-go judges it: from when this process last saw the record change, on
its own clock, never from stamps another wrote (a ``renewTime`` in the future, a skewed
replica's clock, a hand edit)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from mcd.cluster.api import ApiError
from mcd.cluster.lease import LeaseLock, Observation
from mcd.cluster.nodelease import NodeLease

PATH = "/apis/coordination.k8s.io/v1/namespaces/mcd/leases"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class LeaseStore:
    """The Lease API as far as a lock uses it: GET, POST, PUT with resourceVersion checks."""

    def __init__(self) -> None:
        self.objects: dict[str, dict[str, Any]] = {}
        self.version = 0

    def put_held(self, name: str, holder: str, renew: str, duration: int) -> None:
        self.version += 1
        self.objects[f"{PATH}/{name}"] = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": name, "namespace": "mcd", "resourceVersion": str(self.version)},
            "spec": {
                "holderIdentity": holder,
                "renewTime": renew,
                "leaseDurationSeconds": duration,
            },
        }

    def request(self, method: str, path: str, body: Any = None, **_: Any) -> dict[str, Any]:
        if method == "GET":
            if path not in self.objects:
                raise ApiError(404, "NotFound", "not found")
            return copy.deepcopy(self.objects[path])
        if method == "POST":
            path = f"{path}/{body['metadata']['name']}"
            if path in self.objects:
                raise ApiError(409, "AlreadyExists", "exists")
        elif method == "PUT":
            have = self.objects[path]["metadata"]["resourceVersion"]
            if body["metadata"].get("resourceVersion") != have:
                raise ApiError(409, "Conflict", "stale")
        self.version += 1
        stored = copy.deepcopy(body)
        stored["metadata"]["resourceVersion"] = str(self.version)
        self.objects[path] = stored
        return copy.deepcopy(stored)


FUTURE = "2100-01-01T00:00:00.000000Z"
PAST = "2001-01-01T00:00:00.000000Z"


def test_a_record_seen_for_the_first_time_is_never_expired_whatever_its_stamps() -> None:
    clock = Clock()
    seen = Observation(clock)
    assert not seen.expired({"holderIdentity": "a", "renewTime": PAST, "leaseDurationSeconds": 15})
    clock.now += 15
    assert not seen.expired({"holderIdentity": "a", "renewTime": PAST, "leaseDurationSeconds": 15})
    clock.now += 0.5
    assert seen.expired({"holderIdentity": "a", "renewTime": PAST, "leaseDurationSeconds": 15})


def test_every_change_of_the_record_starts_the_count_again() -> None:
    clock = Clock()
    seen = Observation(clock)
    spec = {"holderIdentity": "a", "renewTime": PAST, "leaseDurationSeconds": 10}
    seen.expired(spec)
    for renewal in range(5):  # a holder that keeps renewing is never taken over
        clock.now += 9
        spec = {**spec, "renewTime": f"2001-01-01T00:00:0{renewal}.000000Z"}
        assert not seen.expired(spec)
    clock.now += 11
    assert seen.expired(spec)


@pytest.mark.parametrize("renew", [FUTURE, PAST, "not a time", ""])
def test_the_controller_lease_is_taken_one_duration_after_it_stopped_changing(renew: str) -> None:
    store, clock = LeaseStore(), Clock()
    store.put_held("mcd-controller", "evil", renew, 15)
    lock = LeaseLock(store, "mcd", "mcd-controller", "replica-1", duration=15)  # type: ignore[arg-type]
    lock.observation = Observation(clock)
    assert not lock.try_acquire_or_renew()
    assert lock.holder == "evil"
    clock.now += 14
    assert not lock.try_acquire_or_renew()
    clock.now += 2
    assert lock.try_acquire_or_renew()
    spec = store.objects[f"{PATH}/mcd-controller"]["spec"]
    assert spec["holderIdentity"] == "replica-1"
    assert spec["leaseDurationSeconds"] == 15


def test_the_node_lease_with_a_future_renew_time_is_taken_one_duration_later() -> None:
    store, clock = LeaseStore(), Clock()
    store.put_held("node-1", "evil", FUTURE, 60)
    lease = NodeLease(store, "node-1", holder="agent-1", namespace="mcd", duration=60)  # type: ignore[arg-type]
    lease.observation = Observation(clock)
    assert lease.try_acquire() == "evil"
    clock.now += 61
    assert lease.try_acquire() == ""
    assert store.objects[f"{PATH}/node-1"]["spec"]["holderIdentity"] == "agent-1"
