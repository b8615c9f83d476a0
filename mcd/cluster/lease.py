"""Leader election with a ``coordination.k8s.io/v1`` Lease, as client-go's leaderelection.

The holder renews ``renewTime`` every ``retry`` seconds; a candidate takes the Lease only
when it is free or its record has not changed for ``leaseDurationSeconds`` *as this process
saw it* (:class:`Observation`: its own monotonic clock, from the moment it last saw the
record change), never judged from stamps it did not write: a ``renewTime`` in the future (a
hand edit, a replica with a skewed clock) delays a takeover by one duration, not until that
date. Every write carries the resourceVersion it read, so of two candidates racing for an
expired Lease exactly one wins (the other gets 409 and stays a candidate).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime

from mcd.cluster.api import ApiError, Kube, Obj

log = logging.getLogger(__name__)


def leases_path(namespace: str) -> str:
    return f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"


def _now() -> datetime:
    return datetime.now(UTC)


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Observation:
    """Whether a Lease held by another has expired, as client-go's leader election judges it:
    by how long its record (holder, renewTime, duration, transitions) has stayed unchanged on
    this process's own monotonic clock. The first sight of a record starts the count."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.record: tuple[str, ...] | None = None
        self.since = 0.0

    def expired(self, spec: Obj) -> bool:
        seen = tuple(
            str(spec.get(key) or "")
            for key in ("holderIdentity", "renewTime", "leaseDurationSeconds", "leaseTransitions")
        )
        now = self.clock()
        if seen != self.record:
            self.record, self.since = seen, now
            return False
        return now - self.since > _duration(spec)


def _duration(spec: Obj) -> float:
    try:
        return max(0.0, float(spec.get("leaseDurationSeconds") or 0))
    except (TypeError, ValueError):
        return 0.0


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
        self.observation = Observation()
        self.before_take: Callable[[], str] = lambda: ""
        """Asked just before this identity takes the Lease (not before a renewal): a reason
        not to ("" to go on), kept in :attr:`refused`."""
        self.refused = ""

    def try_acquire_or_renew(self) -> bool:
        """One attempt: True when this identity holds the Lease afterwards."""
        now = _now()
        try:
            lease = self.kube.request("GET", self.path)
        except ApiError as e:
            if e.status != 404:
                raise
            return self._may_take() and self._create(now)
        spec = lease.get("spec") or {}
        holder = str(spec.get("holderIdentity") or "")
        self.holder = holder
        if holder and holder != self.identity and not self.observation.expired(spec):
            return False
        if holder != self.identity and not self._may_take():
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

    def _may_take(self) -> bool:
        self.refused = self.before_take()
        return not self.refused

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


UPSTREAM_NAMESPACE = "openshift-machine-config-operator"
UPSTREAM_NAME = "machine-config-controller"
"""Upstream's controller: its Deployment, and the Lease it elects its leader with
(``cmd/machine-config-controller``: ``common.CreateResourceLock`` with ``componentName``, in
``--resourcelock-namespace``, which its Deployment sets to the operator's namespace)."""
UPSTREAM_LEASE_SECONDS = 137.0
"""library-go's ``LeaderElectionDefaulting`` duration, when the Lease does not say."""


UPSTREAM_OPERATOR = "machine-config-operator"
UPSTREAM_OPERATOR_LEASE = "machine-config"
"""Upstream's operator: its Deployment, and its Lease (``cmd/machine-config-operator``:
``CreateResourceLock`` with ``componentName`` ``machine-config``, in its namespace)."""


def upstream_controller(kube: Kube, now: datetime | None = None) -> str:
    """Why upstream's machine-config-controller runs here ("" when it does not): its
    Deployment is scaled above zero, or its Lease is held and was renewed within two of its
    durations (a stopped one releases it: ``ReleaseOnCancel``). Raises :class:`ApiError`
    when either cannot be read (404 aside): the caller cannot tell."""
    return upstream_component(kube, UPSTREAM_NAME, UPSTREAM_NAME, now)


def upstream_operator(kube: Kube, now: datetime | None = None) -> str:
    """Why upstream's machine-config-operator runs here ("" when it does not), as
    :func:`upstream_controller` tells for the controller."""
    return upstream_component(kube, UPSTREAM_OPERATOR, UPSTREAM_OPERATOR_LEASE, now)


def upstream_component(kube: Kube, deployment: str, lease_name: str,
                       now: datetime | None = None) -> str:  # fmt: skip
    """Why the upstream component with this Deployment and Lease (in upstream's namespace)
    runs here ("" when it does not)."""
    deployments = f"/apis/apps/v1/namespaces/{UPSTREAM_NAMESPACE}/deployments"
    try:
        found = kube.request("GET", f"{deployments}/{deployment}")
    except ApiError as e:
        if e.status != 404:
            raise
    else:
        replicas = (found.get("spec") or {}).get("replicas")
        replicas = 1 if replicas is None else replicas
        if not isinstance(replicas, int) or replicas > 0:
            return f"its Deployment {UPSTREAM_NAMESPACE}/{deployment} has {replicas} replica(s)"
    try:
        lease = kube.request("GET", f"{leases_path(UPSTREAM_NAMESPACE)}/{lease_name}")
    except ApiError as e:
        if e.status != 404:
            raise
        return ""
    spec = lease.get("spec") or {}
    holder = str(spec.get("holderIdentity") or "")
    if not holder:
        return ""
    renewed = str(spec.get("renewTime") or "")
    try:
        at = datetime.fromisoformat(renewed.replace("Z", "+00:00"))
    except ValueError:
        at = None
    duration = _duration(spec) or UPSTREAM_LEASE_SECONDS
    if at is None or at.tzinfo is None or ((now or _now()) - at).total_seconds() < 2 * duration:
        return (f"its Lease {UPSTREAM_NAMESPACE}/{lease_name} is held by {holder} "
                f"(renewed {renewed or 'never'})")  # fmt: skip
    return ""
