"""``MachineConfiguration/cluster``: its node disruption policies published, as upstream's operator.

Upstream ``syncMachineConfiguration`` (pkg/operator/sync.go): the object is created when
missing (``spec.managementState: Managed``, as the operator's server-side apply), and its
status carries ``spec.nodeDisruptionPolicy`` merged over the defaults
(:mod:`mcd.model.disruption.publish`), written only when it changes, retried on a conflict
from a fresh read. The agents read only that status
(:func:`mcd.cluster.policies.cluster_rules`), so ``kubectl edit machineconfiguration cluster``
changes what the next rollout costs.

The leading controller watches the object; where the CRD is not installed it looks again every
minute (one line in the log, once). Where upstream's machine-config-operator runs (its
Deployment or its Lease, :func:`mcd.cluster.lease.upstream_operator`), it writes nothing: that
operator is the writer.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime

from mcd.cluster.api import ApiError, Kube
from mcd.cluster.informer import Informer
from mcd.cluster.lease import upstream_operator
from mcd.model.disruption.publish import publish

log = logging.getLogger(__name__)

MACHINECONFIGURATIONS = "/apis/operator.openshift.io/v1/machineconfigurations"
NAME = "cluster"
"""Upstream ``MCOOperatorKnobsObjectName``."""
ABSENT_EVERY = 60.0
"""Seconds between two looks for the CRD while it is not installed."""
RESYNC = 30.0
"""Seconds between two syncs when nothing changed (a write that failed is retried)."""
UPSTREAM_EVERY = 30.0
"""Seconds between two looks for upstream's operator."""
CONFLICT_TRIES = 5
"""client-go's ``retry.DefaultBackoff``: 5 steps."""


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class MachineConfigurationSync:
    """Run :meth:`run` in a thread of the leading controller; :meth:`sync` once per change."""

    def __init__(
        self,
        kube: Kube,
        version: str,
        leading: Callable[[], bool] = lambda: True,
        resync: float = RESYNC,
        absent_every: float = ABSENT_EVERY,
        clock: Callable[[], float] = time.monotonic,
        now: Callable[[], str] = _now,
    ) -> None:
        self.kube, self.version, self.leading = kube, version, leading
        self.resync, self.absent_every, self.clock, self.now = resync, absent_every, clock, now
        self.wake = threading.Event()
        self.informer = Informer(kube, MACHINECONFIGURATIONS, lambda _k, _o: self.wake.set())
        self.upstream = ""
        """Why upstream's operator is taken to run ("" when it is not)."""
        self._looked = float("-inf")
        self._said = ""
        self._problem = ""

    def run(self, stop: threading.Event) -> None:
        if not self._wait_served(stop):
            return
        threading.Thread(target=self.informer.run, args=(stop,), daemon=True).start()
        while not self.informer.synced.wait(0.1):
            if stop.is_set():
                return
        while not stop.is_set():
            self.wake.clear()
            try:
                self.sync()
            except ApiError as e:
                log.warning("Could not sync MachineConfiguration/%s: %s", NAME, e)
            except Exception:  # never let the thread die: the policies would go stale silently
                log.exception("Syncing MachineConfiguration/%s failed", NAME)
            self.wake.wait(self.resync)

    def _wait_served(self, stop: threading.Event) -> bool:
        """Until the CRD is served (False once stopped)."""
        told = False
        while not stop.is_set():
            try:
                self.kube.request("GET", MACHINECONFIGURATIONS, {"limit": 1})
                return True
            except ApiError as e:
                if e.status != 404:
                    log.warning("Could not look for MachineConfigurations: %s", e)
                elif not told:
                    log.info(
                        "No MachineConfiguration CRD on this cluster: the agents use the default "
                        "node disruption policies (looking again every %.0fs)",
                        self.absent_every,
                    )
                    told = True
            stop.wait(self.absent_every)
        return False

    def _upstream_runs(self) -> bool:
        if self.clock() - self._looked >= UPSTREAM_EVERY:
            self._looked = self.clock()
            try:
                self.upstream = upstream_operator(self.kube)
            except ApiError as e:
                self.upstream = f"cannot tell whether it runs: {e}"
            if self.upstream and self._said != self.upstream:
                log.warning(
                    "Upstream's machine-config-operator runs on this cluster (%s): it publishes "
                    "MachineConfiguration/%s status, mcd's controller does not",
                    self.upstream,
                    NAME,
                )
            self._said = self.upstream
        return bool(self.upstream)

    def sync(self) -> None:
        """One pass: create the object if missing, else publish its status if it changed."""
        if not self.leading() or self._upstream_runs():
            return
        obj = self.informer.get(NAME)
        if obj is None:
            log.info("MachineConfiguration object doesn't exist; a new one will be created")
            body = {"apiVersion": "operator.openshift.io/v1", "kind": "MachineConfiguration",
                    "metadata": {"name": NAME}, "spec": {"managementState": "Managed"}}  # fmt: skip
            try:
                self.informer.observe(self.kube.request("POST", MACHINECONFIGURATIONS, body=body))
            except ApiError as e:
                if e.status != 409:
                    raise
            self.wake.set()  # its status next
            return
        for attempt in range(CONFLICT_TRIES):
            publication = publish(obj, self.version, self.now())
            if publication.problem and publication.problem != self._problem:
                log.error("MachineConfiguration/%s: spec.nodeDisruptionPolicy not published: %s",
                          NAME, publication.problem)  # fmt: skip
            self._problem = publication.problem
            if publication.status is None:
                return
            log.info(
                "Updating MachineConfiguration status (generation %s)",
                (obj.get("metadata") or {}).get("generation"),
            )
            try:
                written = self.kube.request(
                    "PUT", f"{MACHINECONFIGURATIONS}/{NAME}/status",
                    body={**obj, "status": publication.status},
                )  # fmt: skip
            except ApiError as e:
                if e.status != 409 or attempt == CONFLICT_TRIES - 1:
                    raise
                obj = self.kube.request("GET", f"{MACHINECONFIGURATIONS}/{NAME}")  # fresh
                continue
            self.informer.observe(written)
            return
