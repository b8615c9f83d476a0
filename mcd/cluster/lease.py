"""Leader election with a ``coordination.k8s.io/v1`` Lease, as client-go's leaderelection.

The holder renews ``renewTime`` every ``retry`` seconds; a candidate takes the Lease only
when it is free or its last renewal is older than ``leaseDurationSeconds``. Every write
carries the resourceVersion it read, so of two candidates racing for an expired Lease
exactly one wins (the other gets 409 and stays a candidate).
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

from mcd.cluster.api import ApiError, Kube, Obj

log = logging.getLogger(__name__)


def leases_path(namespace: str) -> str:
    return f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"


def _now() -> datetime:
    return datetime.now(UTC)


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _parse(stamp: str) -> datetime | None:
    for fmt in ("%Y-%m-%dT%H:%M:%S.%fZ", "%Y-%m-%dT%H:%M:%SZ"):
        try:
            return datetime.strptime(stamp, fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    return None


class LeaseLock:
    def __init__(
        self, kube: Kube, namespace: str, name: str, identity: str, duration: int = 15
    ) -> None:
        self.kube = kube
        self.path = f"{leases_path(namespace)}/{name}"
        self.namespace, self.name = namespace, name
        self.identity = identity
        self.duration = duration
        self.holder = ""

    def try_acquire_or_renew(self) -> bool:
        """One attempt: True when this identity holds the Lease afterwards."""
        now = _now()
        try:
            lease = self.kube.request("GET", self.path)
        except ApiError as e:
            if e.status != 404:
                raise
            return self._create(now)
        spec = lease.get("spec") or {}
        holder = str(spec.get("holderIdentity") or "")
        self.holder = holder
        renewed = _parse(str(spec.get("renewTime") or ""))
        duration = int(spec.get("leaseDurationSeconds") or self.duration)
        expired = renewed is None or now - renewed > timedelta(seconds=duration)
        if holder and holder != self.identity and not expired:
            return False
        new_spec = dict(spec)
        if holder != self.identity:
            new_spec["acquireTime"] = _stamp(now)
            new_spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + (
                1 if holder else 0
            )
        new_spec.update(
            holderIdentity=self.identity, renewTime=_stamp(now), leaseDurationSeconds=self.duration
        )
        body: Obj = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {**(lease.get("metadata") or {})},
            "spec": new_spec,
        }
        return self._take("PUT", self.path, body)

    def release(self) -> None:
        """Give the Lease up (on a clean stop), so a standby takes over at once."""
        try:
            lease = self.kube.request("GET", self.path)
            spec = lease.get("spec") or {}
            if spec.get("holderIdentity") != self.identity:
                return
            spec = {**spec, "holderIdentity": "", "renewTime": None}
            body = {**lease, "spec": {k: v for k, v in spec.items() if v is not None}}
            self.kube.request("PUT", self.path, body=body)
        except ApiError as e:
            log.warning("Could not release lease %s: %s", self.name, e)

    def _create(self, now: datetime) -> bool:
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": self.duration,
                "acquireTime": _stamp(now),
                "renewTime": _stamp(now),
                "leaseTransitions": 0,
            },
        }
        return self._take("POST", leases_path(self.namespace), body)

    def _take(self, method: str, path: str, body: Obj) -> bool:
        """Write the Lease naming this holder; False when another writer came first (409)."""
        try:
            self.kube.request(method, path, body=body)
        except ApiError as e:
            if e.status == 409:
                return False
            raise
        self.holder = self.identity
        return True
