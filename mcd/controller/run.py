"""``mcd controller``: leader election, informers, and the sync loop.

A replica first takes the Lease (``mcd-controller`` in the install namespace: ``--namespace``,
else the pod's, else ``mcd``, as the Deployment; its Events go there too); until it holds it
it only asks for the Lease every ``retry`` seconds and starts no watch (a standby costs
one request per retry). Of the pools, it paces only those that record its Lease (or that
it records it on): :mod:`mcd.controller.leadership.pacer`. It does not run while upstream's
machine-config-controller does (checked at start, before it takes the Lease, and every
30 seconds while it leads): one line, exit code 78 (:mod:`mcd.controller.leadership.election`).

The leader publishes the node disruption policies of MachineConfiguration/cluster, as upstream's
operator (:mod:`mcd.controller.operator`). It lists and watches Nodes, MachineConfigPools and
MachineConfigs, and runs a pass over
all pools (and starts the drains the agents asked for: :mod:`mcd.controller.drain`) whenever
one of them changes (changes arriving together are coalesced: for ``settle`` seconds, or 20
times as long as the last pass took, at most half a second, so a big fleet's stream of Node
changes costs a bounded share of a core; once a node that was updating is Done, its slot free,
at most 0.1 s or 4 times the CPU the last pass took), at the latest every ``resync`` seconds,
and when a maintenance window opens. A pass hands its Node writes to writer threads and does
not wait for them. It renews the Lease between passes; a leader that finds another holder, or
cannot renew within two thirds of the Lease duration, stops with exit code 1 (as client-go's
``OnStoppedLeading``), so two replicas never act at once. SIGTERM releases the Lease.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from types import FrameType
from typing import Any

from mcd import __version__
from mcd.cluster.api import ApiError, Kube, Obj, load_client
from mcd.cluster.configs import MACHINECONFIGS
from mcd.cluster.drain.forecast import DrainForecast
from mcd.cluster.informer import Informer
from mcd.cluster.lease import LeaseLock
from mcd.cluster.podhealth import PodRestarts
from mcd.cluster.pools import NODES, POOLS, PoolWriter, node_fields
from mcd.controller.dirty import DirtyPools
from mcd.controller.drain import DrainController
from mcd.controller.generated.step import KINDS, GeneratedStep
from mcd.controller.history import PRUNE_EVERY, AutoPrune
from mcd.controller.joining.labels import CustomPoolLabels
from mcd.controller.leadership.election import UpstreamGuard, install_namespace
from mcd.controller.leadership.pacer import Pacer
from mcd.controller.operator.machineconfiguration import MachineConfigurationSync
from mcd.controller.poolalert import PoolAlertMetric
from mcd.controller.refill.passes import changed_nodes, refill_only
from mcd.controller.rendering import RenderStep
from mcd.controller.scrapers import ScraperCheck, guarded
from mcd.controller.service import ControllerMetrics
from mcd.controller.sync import FULL_EVERY, PoolReport, Snapshot, Syncer, drain_policies
from mcd.controller.writes import CONNECTIONS
from mcd.host.statusserver import StatusServer
from mcd.model.pool.hygiene import Membership
from mcd.model.pool.pools import NodeView, name_of

log = logging.getLogger(__name__)

LEASE_NAME = "mcd-controller"
SETTLE_PER_PASS = 20.0
MAX_SETTLE = 0.5
"""Changes are coalesced for up to 20x the last pass's time (at most 0.5 s): a 5,000-node pass
takes ~40 ms, and a pass per Node change would keep a core busy during a rollout."""
FREED_SETTLE = 0.1
"""At most this long when a node that was updating became Done (its slot is free)..."""
FREED_PER_CPU = 4.0
"""... or 4x the CPU the last pass took, if longer: a pass no longer waits on its writes, and
at 5,000 nodes, where slots free all the time, a pass every 0.1 s cost 4.6 ms of CPU per node
update; this keeps passes to about a fifth of a core."""
DRAINS_EVERY = 1.0
"""A pass after nothing but Node changes starts the drains asked for at most this often (each
look is a walk over every Node: at 5,000 nodes, passes come several times a second)."""

USER_AGENT = "machine-config-controller"


@dataclass
class ControllerOptions:
    kubeconfig: str | None = None
    metrics_url: str = "127.0.0.1:8798"
    metrics_auth: str = "auto"
    """token | none | auto (token unless the listener is on loopback)"""
    metrics_tls: tuple[str, str] | None = None
    namespace: str = ""
    identity: str = ""
    lease_duration: int = 15
    retry: float = 2.0
    resync: float = 30.0
    settle: float = 0.05
    prune_grace: float = 86_400.0
    """Seconds an unused rendered config is kept (0: never pruned)."""
    prune_every: float = PRUNE_EVERY
    take_over_from: tuple[str, ...] = ()
    """Leases (``NAMESPACE/NAME``) whose pools this controller takes once they are not held
    (:mod:`mcd.controller.leadership.pacer`)."""


class Controller:
    def __init__(self, options: ControllerOptions) -> None:
        self.options = options
        self.namespace = install_namespace(options.namespace)
        identity = options.identity or f"{socket.gethostname()}_{os.getpid()}"
        api = load_client(options.kubeconfig)
        api.user_agent = f"{USER_AGENT} ({identity})"  # which replica asked, in audit logs
        api.pool_size = CONNECTIONS
        self.kube = Kube(api)
        self.lease = LeaseLock(
            self.kube, self.namespace, LEASE_NAME, identity, options.lease_duration
        )
        self.upstream = UpstreamGuard(self.kube)
        self.lease.before_take = self.upstream.may_lead
        self.metrics = ControllerMetrics()
        self.pool_alert = PoolAlertMetric(self.metrics.registry)
        self.writer = PoolWriter(self.kube)
        self.writer.event_namespace = self.namespace  # beside the Lease, where the runbook looks
        self.stop = threading.Event()
        self.wake = threading.Event()
        self.dirty = DirtyPools(every=min(options.resync, options.retry))
        self.pools = Informer(self.kube, POOLS, self._changed, on_diff=self.dirty.pool)
        self.configs = Informer(self.kube, MACHINECONFIGS, self._changed, copies=False,
                                on_diff=self.dirty.config)  # fmt: skip
        self.freed = threading.Event()  # a node became Done: a slot is free, no settling
        self._done: dict[str, bool] = {}
        self._drains_at = float("-inf")
        self._membership: Membership | None = None
        self.nodes = Informer(self.kube, NODES, self._node_changed, transform=node_fields,
                              copies=False, on_diff=self.dirty.node)  # fmt: skip
        self.generating = {k.kind: Informer(self.kube, k.path, self._changed) for k in KINDS}
        self.generated = GeneratedStep(self.kube, __version__, observe_config=self.configs.observe)
        self.drains = DrainController(
            self.kube, self.metrics, self.nodes.get, wake=self._wake_all, observe=self._observe
        )
        self.syncer = Syncer(
            self.writer,
            __version__,
            observe_config=self.configs.observe,
            observe_pool=self.pools.observe,
            observe_node=self._observe,
            background_taints=True,
            background_targets=True,
            drain_blocked=self.drains.blocked,
            drain_forecast=DrainForecast(self.kube).blocked,
            drain_released=self.drains.released,
            observe_alerts=self.pool_alert.update,
            pod_restarts=PodRestarts(self.kube).of,
            render_step=RenderStep(self.writer, __version__, self.configs.observe,
                                   self.pools.observe, self.metrics.os_image_url_override),
        )  # fmt: skip
        self.drains.writer.event_namespace = self.namespace
        self.joining = CustomPoolLabels(self.writer, self._observe)
        self.pacer = Pacer(self.kube, self.writer, f"{self.namespace}/{LEASE_NAME}",
                           options.take_over_from, observe_pool=self.pools.observe)  # fmt: skip
        self.pruner = AutoPrune(
            self.kube, timedelta(seconds=options.prune_grace), every=options.prune_every,
            mine=self.pacer.mine,
        )  # fmt: skip
        self.leading = False
        self.machineconfiguration = MachineConfigurationSync(
            self.kube, __version__, leading=lambda: self.leading
        )
        self.last_tick = time.monotonic()
        checked = guarded(options.metrics_auth, options.metrics_url)
        self.server = StatusServer(
            options.metrics_url, self.metrics.registry, self._healthz, self._readyz,
            scrapers=ScraperCheck(self.kube) if checked else None,
            tls=options.metrics_tls,
        )  # fmt: skip

    # -- probes -------------------------------------------------------------------------

    def _healthz(self) -> str:
        limit = max(self.options.resync, self.options.retry) * 4 + 60
        stalled = time.monotonic() - self.last_tick
        return f"controller loop stalled for {stalled:.0f}s" if stalled > limit else ""

    def _readyz(self) -> str:
        if not self.leading:
            return ""  # a standby is ready: it waits for the Lease
        caches = (self.pools, self.configs, self.nodes)
        return "" if all(i.synced.is_set() for i in caches) else "caches not synced yet"

    def _changed(self, kind: str, _obj: dict[str, object]) -> None:
        if kind == "SYNC":  # a relist: what changed is not known
            self.dirty.everything()
        self.wake.set()

    def _wake_all(self) -> None:
        """A change no informer names (a drain's outcome): a full pass."""
        self.dirty.everything()
        self.wake.set()

    def _observe(self, node: Obj) -> None:
        """A Node this process wrote, into the cache (its watch event then changes nothing
        and wakes no pass) and into the Done bookkeeping below."""
        self.nodes.observe(node)
        name = name_of(node)
        if name:
            self._done[name] = NodeView.of(node).done
            self.syncer.refill.wrote(name)  # no watch event names it

    def _node_changed(self, kind: str, node: dict[str, Any]) -> None:
        """A node that was updating and is now Done frees a slot of its pool: the next pass
        starts without settling (the pace of a rollout is the pace of these)."""
        if kind == "SYNC":
            self.dirty.everything()
        name = name_of(node)
        if name:
            done = kind != "DELETED" and NodeView.of(node).done
            if done and self._done.get(name) is False:
                self.freed.set()
            self._done[name] = done
            if kind == "DELETED":
                del self._done[name]
        self.wake.set()

    # -- the loop -----------------------------------------------------------------------

    def run(self) -> int:
        def on_term(_sig: int, _frame: FrameType | None) -> None:
            self.stop.set()
            self.wake.set()

        signal.signal(signal.SIGTERM, on_term)
        signal.signal(signal.SIGINT, on_term)
        if self.upstream.look():
            return self.upstream.stopping()
        self.server.start()
        log.info(
            "mcd controller %s starting; waiting for lease %s/%s as %s",
            __version__,
            self.namespace,
            LEASE_NAME,
            self.lease.identity,
        )
        try:
            while not self.stop.is_set():
                self.last_tick = time.monotonic()
                if self._try_lease():
                    return self._lead()
                if self.upstream.runs:
                    return self.upstream.stopping()
                self.stop.wait(self.options.retry)
            return 0
        finally:
            self.server.stop()

    def _try_lease(self) -> bool:
        try:
            return self.lease.try_acquire_or_renew()
        except ApiError as e:
            log.warning("Could not get lease %s: %s", LEASE_NAME, e)
            return False

    def _lead(self) -> int:
        log.info("Became leader (lease %s/%s)", self.namespace, LEASE_NAME)
        self.leading = True
        self.metrics.leader.set(1)
        for informer in (self.pools, self.configs, self.nodes, *self.generating.values()):
            threading.Thread(target=informer.run, args=(self.stop,), daemon=True).start()
        threading.Thread(  # the node disruption policies, as upstream's operator
            target=self.machineconfiguration.run, args=(self.stop,), daemon=True
        ).start()
        for informer in (self.pools, self.configs, self.nodes):
            while not informer.synced.wait(0.1):
                if self.stop.is_set():
                    return self._release()
        renewed = time.monotonic()
        next_window: datetime | None = None
        while not self.stop.is_set():
            self.last_tick = time.monotonic()
            if self.upstream.due() and self.upstream.look():
                self._release()
                return self.upstream.stopping()
            if time.monotonic() - renewed >= self.options.retry:
                if self._try_lease():
                    renewed = time.monotonic()
                elif (
                    self.lease.holder not in ("", self.lease.identity)
                    or time.monotonic() - renewed > self.options.lease_duration * 2 / 3
                ):
                    # client-go's renewDeadline: stop acting well before a standby may
                    # take the Lease (leaseDurationSeconds after the last renewal)
                    log.error("Lost lease %s (holder: %s); stopping", LEASE_NAME, self.lease.holder)
                    self.syncer.stop()
                    self.drains.shutdown()
                    self.leading = False
                    self.metrics.leader.set(0)
                    return 1
            self.wake.clear()
            self.freed.clear()
            try:
                began, cpu = time.monotonic(), time.thread_time()
                next_window = self._pass()
                took, cpu = time.monotonic() - began, time.thread_time() - cpu
                self.dirty.took(cpu)  # a whole pass's cost sets the period of the next
                self.syncer.full_every = max(FULL_EVERY, self.dirty.period)
            except Exception:  # a bug in one pass must not stop the rollout of every pool
                log.exception("Controller pass failed; retrying")
                next_window, took, cpu = None, 0.0, 0.0
            timeout = min(self.options.resync, self.options.retry)
            if next_window is not None:
                until = (next_window - datetime.now(UTC)).total_seconds()
                timeout = max(0.0, min(timeout, until + 0.5))
            if self.wake.wait(timeout):
                settle = max(self.options.settle, min(MAX_SETTLE, SETTLE_PER_PASS * took))
                if self.freed.is_set():  # a slot is free: the wave waits for no more
                    freed = max(self.options.settle, FREED_SETTLE, FREED_PER_CPU * cpu)
                    settle = min(settle, freed)
                self.stop.wait(settle)  # coalesce a burst of changes
        return self._release()

    def _pass(self) -> datetime | None:
        taken = time.monotonic()
        changes = self.dirty.take(taken)  # before the caches are read
        nodes = changed_nodes(changes, self.nodes.items, self.nodes.get)
        if self.joining(nodes, self.pools.items(), self.configs.get):  # first
            changes.everything()  # relabelled: every pool's membership read again
        pools, paced, claimed = self.pacer.sort(self.pools.items())  # before any write
        only = self.dirty.pools_of(changes, pools, time.monotonic())
        only = frozenset(paced if only is None else (set(only) & paced) | claimed)
        configs = {str(c["metadata"]["name"]): c for c in self.configs.items()}
        self._generate(configs)
        if (refilled := refill_only(changes, pools, only, self.syncer, self.drains,
                                    self.nodes.get, taken)) is not None:  # fmt: skip
            return self._reported(refilled, whole=False)  # changed nodes, targets: no walk
        previous, self._membership = self._membership, None  # kept only by a pass that ends
        snap = Snapshot(
            pools=pools,
            configs=configs,
            nodes=self.nodes.items(),
            taken=taken,
            refill_only=changes.nodes_only,
            previous=None if changes.full else previous,  # no node moved pools: refreshed
        )
        due = not changes.nodes_only or taken - self._drains_at >= DRAINS_EVERY
        if due and not self.drains.idle(snap.nodes):  # idle: nothing the drains could start
            policies = drain_policies(snap)
            nodes = snap.nodes
            if self.pacer.refused:  # only the drains of the pools this controller paces
                nodes = [n for n in nodes if name_of(n) in policies
                         and policies[name_of(n)].pool in paced]  # fmt: skip
            self.drains.sync(nodes, policies)
            self._drains_at = taken
        reports = self.syncer.sync_all(snap, only)
        self._membership = snap.membership
        if self.syncer.pending:  # work left for the next pass (no watch event will ask)
            self.dirty.named(sorted(self.syncer.pending))
            self.wake.set()
        return self._reported(reports)

    def _reported(self, reports: list[PoolReport], whole: bool = True) -> datetime | None:
        """A pass's reports into the metrics; when the next window opens."""
        self.metrics.syncs.inc()
        windows = []
        for report in reports:
            self.metrics.pool_status(report.name, report.status)
            if report.rollout.targets:
                self.metrics.node_updates.labels(report.name).inc(len(report.rollout.targets))
            if report.next_window is not None:
                windows.append(report.next_window)
        synced = [r for r in reports if not r.refilled_only]
        if whole and (synced or not reports) and self._membership is not None:
            self.metrics.rollout.observe(  # the members as the pass read them (it writes none
                self.pools.items(), (), synced, self.drains.blocked(),  # of what is counted)
                partial=True, members_of=self._membership.members,
            )  # fmt: skip
        if self.pruner.due(time.monotonic()):
            self.pruner.run(self.configs.items, self.pools.items, self.nodes.items,
                            datetime.now(UTC), time.monotonic())  # fmt: skip
        return min(windows, default=None)

    def _generate(self, configs: dict[str, Obj]) -> None:
        """KubeletConfigs and ContainerRuntimeConfigs into their MachineConfigs (a kind whose
        CRD is not installed, its cache never synced, is left out); a failure here is logged
        and never stops the rollouts."""
        objects = {kind: informer.items() for kind, informer in self.generating.items()
                   if informer.synced.is_set()}  # fmt: skip
        if not objects:
            return
        try:
            self.generated(objects, self.pools.items(), configs)
        except Exception:
            log.exception("Generating MachineConfigs failed; retrying")

    def _release(self) -> int:
        self.syncer.stop()
        self.drains.shutdown()
        self.lease.release()
        self.leading = False
        self.metrics.leader.set(0)
        log.info("Released lease %s; stopped", LEASE_NAME)
        return 0
