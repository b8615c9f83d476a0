"""One agent per node: a ``coordination.k8s.io/v1`` Lease named after the node.

The protocol is client-go's leader election, for one candidate set of one node: the
holder renews ``renewTime`` every ``duration / 3``; a contender takes the Lease over only
when its record has not changed for ``duration`` seconds *as the contender observed it*
(its own clock, so no clock skew between nodes matters), or when the holder released it
(empty ``holderIdentity``) on a clean stop. Every write carries the resourceVersion it
read, so two contenders can never both win (the loser gets 409 and reads again).

A second agent for the same node (a DaemonSet rollout overlap, a second copy started by
hand) waits, saying once in one line who holds the node; it acts only once it holds the
Lease. An agent that loses its Lease (renewals failing for longer than the duration, or
another holder seen) stops acting. Where the Lease API refuses the agent (manifests from
before the Lease: no Role) it says so in one line and runs without it: the on-host writer
lock (:mod:`mcd.host.lock`) still keeps two writers apart.
"""

from __future__ import annotations

import datetime
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable

from mcd.cluster.api import ApiError, Kube, Obj
from mcd.cluster.events import default_namespace
from mcd.cluster.lease import Observation
from mcd.cluster.watch import Backoff

log = logging.getLogger(__name__)

LEASES = "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"
WAIT_POLL = 5.0
"""Seconds between two looks at a Lease another agent holds, while waiting for it."""
DEFAULT_DURATION = 600
"""Seconds. Long on purpose: an agent replaced on the same machine takes over at once (the
host's agent lock proves its predecessor dead), so the duration only bounds the wait when
the holder was on another machine; renewals every ``duration / 3`` (one PUT each) keep the
idle agent at about 18 requests an hour."""


def identity(machine: str = "") -> str:
    """This agent's holder identity: the pod (or host) name, a per-process suffix and, after
    an ``@``, the machine it runs on (``/etc/machine-id``) when known."""
    base = os.environ.get("POD_NAME") or socket.gethostname()
    return f"{base}_{uuid.uuid4().hex[:8]}" + (f"@{machine}" if machine else "")


def machine_of(holder: str) -> str:
    return holder.rpartition("@")[2] if "@" in holder else ""


def micro_time(now: float | None = None) -> str:
    moment = datetime.datetime.fromtimestamp(time.time() if now is None else now, datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Unavailable(Exception):
    """The Lease API refuses this agent (403: the Role is not applied) or does not exist."""


class NodeLease:
    def __init__(
        self,
        kube: Kube,
        node_name: str,
        holder: str | None = None,
        namespace: str | None = None,
        duration: int = DEFAULT_DURATION,
        machine: str = "",
    ) -> None:
        self.kube = kube
        self.name = node_name
        self.machine = machine
        self.holder = holder or identity(machine)
        # The DaemonSet's own namespace, where its Role grants leases; else where Events go.
        self.namespace = namespace or os.environ.get("POD_NAMESPACE") or default_namespace()
        self.duration = duration
        self.held = False
        self._lease: Obj | None = None  # the Lease as the last write returned it
        self.unavailable = ""
        """Why the Lease API cannot be used here (RBAC not applied, no such API), or ''."""
        self.observation = Observation()  # expiry judged on this agent's own clock

    @property
    def collection(self) -> str:
        return LEASES.format(namespace=self.namespace)

    @property
    def path(self) -> str:
        return f"{self.collection}/{self.name}"

    def _spec(self, acquired: str | None) -> Obj:
        now = micro_time()
        spec: Obj = {
            "holderIdentity": self.holder,
            "leaseDurationSeconds": self.duration,
            "renewTime": now,
        }
        spec["acquireTime"] = acquired or now
        return spec

    def try_acquire(self, predecessor_dead: bool = False) -> str:
        """Take or renew the Lease: '' when held, else who holds it (nothing changes).
        ``predecessor_dead``: the caller knows no other agent is alive on this machine (it
        holds the host's agent lock), so a holder of this machine is taken over at once."""
        try:
            lease = self.kube.request("GET", self.path)
        except ApiError as e:
            if e.status == 403:
                raise Unavailable(str(e)) from e
            if e.status != 404:
                raise
            body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": self.name, "namespace": self.namespace},
                    "spec": self._spec(None)}  # fmt: skip
            try:
                self._lease = self.kube.request("POST", self.collection, body=body)
            except ApiError as conflict:
                if conflict.status == 409:  # created by another agent meanwhile
                    return "another agent"
                if conflict.status in (403, 404):
                    raise Unavailable(str(conflict)) from conflict
                raise
            self.held = True
            return ""
        spec = lease.get("spec") or {}
        other = str(spec.get("holderIdentity") or "")
        dead = predecessor_dead and bool(self.machine) and machine_of(other) == self.machine
        if other and other != self.holder and not dead and not self.observation.expired(spec):
            self.held = False
            return other
        if dead and other != self.holder:
            log.info("Taking Lease %s/%s over from %s (no longer running on this machine)",
                     self.namespace, self.name, other)  # fmt: skip
        acquired = str(spec.get("acquireTime") or "") if other == self.holder else None
        lease["spec"] = {**spec, **self._spec(acquired)}
        try:
            self._lease = self.kube.request("PUT", self.path, body=lease)
        except ApiError as e:
            if e.status == 409:
                self.held = False
                return other or "another agent"
            raise
        self.held = True
        return ""

    def renew(self) -> str:
        """One PUT of the Lease as this agent last wrote it; read afresh (as
        :meth:`try_acquire`) only when that copy is stale (409) or missing."""
        lease = self._lease
        if lease is None or not self.held:
            return self.try_acquire()
        spec = lease.get("spec") or {}
        lease = {**lease, "spec": {**spec, **self._spec(str(spec.get("acquireTime") or ""))}}
        try:
            self._lease = self.kube.request("PUT", self.path, body=lease)
        except ApiError as e:
            if e.status not in (404, 409):
                raise
            self._lease = None
            return self.try_acquire()
        return ""

    def acquire(
        self, stop: threading.Event, said: Callable[[str], None], predecessor_dead: bool = False
    ) -> bool:
        """Block until the Lease is held (True) or ``stop`` is set (False). ``said`` is called
        once with the one line that tells why this agent waits."""
        told = False
        errors = Backoff(initial=0.5, maximum=10.0)  # the API server away: look again soon
        while not stop.is_set():
            try:
                holder = self.try_acquire(predecessor_dead)
            except Unavailable as e:
                self.unavailable = str(e)
                log.error(
                    "Cannot use Lease %s/%s (%s): running without it; only the on-host writer "
                    "lock keeps a second agent from writing (apply daemonset/base/02-rbac.yaml)",
                    self.namespace, self.name, e,
                )  # fmt: skip
                return True
            except ApiError as e:
                log.warning("Could not read the Lease %s/%s: %s", self.namespace, self.name, e)
                stop.wait(errors.next())
                continue
            errors.reset()
            if not holder:
                log.info("Holding Lease %s/%s as %s", self.namespace, self.name, self.holder)
                return True
            if not told:
                said(
                    f"node {self.name} is managed by another agent ({holder} holds Lease "
                    f"{self.namespace}/{self.name}); waiting until it stops"
                )
                told = True
            stop.wait(min(WAIT_POLL, self.duration / 3))
        return False

    def keep(self, stop: threading.Event, on_lost: Callable[[str], None]) -> None:
        """Renew until ``stop``; ``on_lost`` when another agent took over or renewals failed
        for longer than the duration."""
        if self.unavailable:
            stop.wait()
            return
        last_renewed = time.monotonic()
        while not stop.wait(self.duration / 3):
            try:
                holder = self.renew()
            except Unavailable as e:
                on_lost(f"Lease {self.namespace}/{self.name} refused: {e}")
                return
            except ApiError as e:
                if time.monotonic() - last_renewed > self.duration:
                    on_lost(f"could not renew Lease {self.namespace}/{self.name}: {e}")
                    return
                log.warning("Could not renew Lease %s/%s: %s", self.namespace, self.name, e)
                continue
            if holder:
                on_lost(f"Lease {self.namespace}/{self.name} is now held by {holder}")
                return
            last_renewed = time.monotonic()

    def release(self) -> None:
        """Give the Lease up at a clean stop, so that the next agent takes over at once."""
        if not self.held:
            return
        try:
            lease = self.kube.request("GET", self.path)
            spec = lease.get("spec") or {}
            if spec.get("holderIdentity") != self.holder:
                return
            lease["spec"] = {**spec, "holderIdentity": "", "leaseDurationSeconds": 1,
                             "renewTime": micro_time()}  # fmt: skip
            self.kube.request("PUT", self.path, body=lease)
            self.held = False
            log.info("Released Lease %s/%s", self.namespace, self.name)
        except ApiError as e:
            log.warning("Could not release Lease %s/%s: %s", self.namespace, self.name, e)
