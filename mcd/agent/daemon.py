"""``mcd start``: the long-running agent of one node.

Threads, each doing one thing:

* the Node watch (``metadata.name=<node>``) hands every new version of the
  Node to the worker, which wakes when anything the agent answers for differs
  from what it last knew, unless the version is the agent's own write; a
  periodic resync reads the Node afresh and syncs anyway
  (:mod:`mcd.agent.sync.wakeups`);
* the worker runs one sync at a time: the boot checks first, then a sync per
  wake-up, always decided from the newest Node the agent knows (its own last
  write or a later watch event, never an older one). A sync is level-triggered:
  an update when one is due, else the Node corrected to what the node is
  (:mod:`mcd.agent.sync.nodesync`). A failed sync marks the node ``Degraded`` (or
  ``Unreconcilable``) and is retried with backoff from 1 s to 60 s; the drift
  monitor, a created MachineConfig or the force file wake it at once, and no
  wake-up cancels a pending retry;
* the drift monitor (inotify), the kubelet health poll, the login monitor (logind's
  session starts in the host journal: ``ssh=accessed`` once per boot) and the HTTP
  listener for ``/metrics``, ``/healthz`` and ``/readyz``.

Before any of these start, the agent listens (an address in use ends it in one line
naming it), then takes the host's agent lock (:mod:`mcd.host.agentlock`) and the node's
Lease (:mod:`mcd.cluster.nodelease`): a second agent for the same node waits, saying so
in one line, and a thread renews the Lease while the agent runs
(:mod:`mcd.agent.sync.ownership`). The main thread only waits
for signals. SIGTERM during an update is deferred until the update step ends
(upstream ``catchIgnoreSIGTERM``).
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable
from functools import partial
from types import FrameType
from typing import TypeVar

from mcd.agent.boot import rebootstrap
from mcd.agent.boot.firstrun import boot
from mcd.agent.commands.once import node_for
from mcd.agent.options import Options
from mcd.agent.pinning import manager as pinning
from mcd.agent.releaseimage import manager as releaseimage
from mcd.agent.report import previouslogs
from mcd.agent.report.drift import DriftMonitor
from mcd.agent.report.metrics import Metrics
from mcd.agent.report.rebootwish import RebootWish
from mcd.agent.report.sidewatch import LoginReporter, poll_kubelet
from mcd.agent.report.startup import log_system_data_in_background
from mcd.agent.report.status import NodeStatus
from mcd.agent.safety import trymode
from mcd.agent.safety.gauges import watch_node
from mcd.agent.safety.guard import SigtermGuard
from mcd.agent.sync.certsync import run_certificate_writer
from mcd.agent.sync.nodesync import sync_node
from mcd.agent.sync.ownership import listen, take_node
from mcd.agent.sync.wakeups import Wakeups
from mcd.agent.update import progress
from mcd.agent.update.context import Context, MissingConfig, Retarget, SyncError, Unreconcilable
from mcd.agent.update.transaction import UpdateError
from mcd.cluster.api import ApiError, Kube, Obj, load_client
from mcd.cluster.configs import wait_for_machine_config
from mcd.cluster.drain import ControllerDrainer, Drainer, DrainError, SelfDrainer
from mcd.cluster.events import EventRecorder, Reason
from mcd.cluster.mcn import MachineConfigNodeReporter
from mcd.cluster.node import NodeWriter
from mcd.cluster.nodelease import NodeLease
from mcd.cluster.watch import Backoff, NodeWatch
from mcd.host.agentlock import AgentLock, machine_id
from mcd.host.errors import HostError
from mcd.host.ondisk import undo
from mcd.host.osupdate.osrelease import read_os_release
from mcd.host.rootfs import Root
from mcd.host.systemd.journal import notify
from mcd.host.systemd.manager import SystemdError
from mcd.model.certificates.serviceca import is_x509_error
from mcd.model.errors import ConfigError

log = logging.getLogger(__name__)
T = TypeVar("T")

EXPECTED = (SyncError, UpdateError, ApiError, DrainError, HostError, SystemdError,
            ConfigError, OSError)  # fmt: skip


class Agent:
    def __init__(self, options: Options, kube: Kube | None = None) -> None:
        self.options = options
        name = options.node_name
        self.kube = kube or Kube(load_client(options.kubeconfig, root_mount=options.root_mount))
        root = Root(options.root_mount)
        host = node_for(root)
        writer = NodeWriter(self.kube, name)
        events = EventRecorder(self.kube, name, background=True)
        self.metrics = Metrics()
        wish = RebootWish(root, options.reboot_sentinel, options.reboot_sentinel_command,
                          options.reboot_check_period)  # fmt: skip
        watch_node(self.metrics, root, host.boot_id, lambda: bool(wish.source))
        status = NodeStatus(writer, self.metrics)
        drainer: Drainer
        if options.drain_mode == "controller":
            drainer = ControllerDrainer(
                writer, events, timeout=options.drain_timeout, poll_interval=1.0
            )
        else:
            drainer = SelfDrainer(
                self.kube, writer, events, timeout=options.drain_timeout,
                on_blocked=self._drain_blocked,
            )  # fmt: skip
        drift = DriftMonitor(
            root, host.effects.systemd, self._on_drift, on_clear=self.wake, on_force=self.wake
        )
        self.ctx = Context(
            name, host, self.kube, writer, events, drainer, status, self.metrics, drift,
            SigtermGuard(events),
        )  # fmt: skip
        self.ctx.mcn = MachineConfigNodeReporter(self.kube, name)  # shared with pinned images
        self.ctx.wish = wish
        self.pinned = pinning.PinnedImages(
            self.kube, name, root, host.effects.systemd, self.ctx.mcn,
            known_node=lambda: writer.current() if self.watch.live() else None,
        )  # fmt: skip
        self.release_images = releaseimage.ReleaseImages(
            self.kube, self.ctx.mcn, root, writer.current
        )
        self.stop = threading.Event()
        self._lock = threading.Lock()
        self._waiting_for: set[str] = set()
        self.backoff = Backoff(initial=options.min_backoff, maximum=options.max_backoff)
        self.wakeups = Wakeups(self.backoff, options.resync_interval)
        self.booting = True
        self.first_sync_done = False
        self.syncs = 0
        self.watch = NodeWatch(self.kube, name, self._on_node, on_error=self._on_watch_error)
        self.agent_lock = AgentLock(root)
        self.lease = NodeLease(
            self.kube, name, duration=options.lease_duration, machine=machine_id(root)
        )
        self.exit_code = 0
        self._signaled = False
        self._x509_error = ""
        self._threads: dict[str, threading.Thread] = {}
        self.logins = (
            LoginReporter(root, self.metrics, self.ctx.writer) if options.login_monitor else None
        )

    # -- inputs, from other threads ------------------------------------------------------

    def _on_node(self, node: Obj) -> None:
        writer = self.ctx.writer
        writer.observe(node)
        self.wakeups.node(node, own_write=writer.wrote(node))

    def wake(self) -> None:
        """Sync now, whatever the backoff says (the cause of a failure may be gone)."""
        self.wakeups.wake()

    def _on_drift(self, reason: str) -> None:
        self.wakeups.drift(reason, self.ctx.drift.epoch)

    def _drain_blocked(self, reason: str) -> None:
        self.ctx.status.progress(reason)

    # -- the worker ------------------------------------------------------------------------

    def _newest_node(self, refresh: bool) -> Obj:
        """The Node to decide from: never older than the agent's own last write; read afresh
        on a periodic resync unless the watch is live (a missed event is then found)."""
        writer = self.ctx.writer
        if refresh and not self.watch.live():
            try:
                node = writer.get()
            except ApiError as e:
                log.warning("Resync could not read node %s: %s", self.options.node_name, e)
            else:
                self._on_node(node)
                return node
        return writer.current()

    def _work(self) -> None:
        while not self.stop.is_set():
            up = self.wakeups.next(self.stop)
            if self.stop.is_set():
                break
            if up.drift is not None:
                self._attempt(self._report_drift, (up.drift, up.drift_epoch))
            elif up.node is not None:
                if self._attempt(self._sync, self._newest_node(up.refresh)):
                    self.wakeups.settled()  # decided from the newest Node: nothing owed
                self.first_sync_done = True
            self._arm_try_deadline()
            if self.ctx.guard.deferred:
                log.info("Update step ended; stopping as asked by SIGTERM")
                self._signaled = True
                self.stop.set()

    def _arm_try_deadline(self) -> None:
        """Wake at the deadline of a try on this node (kept on disk: an agent started again
        wakes for it too), so that an unconfirmed try is reverted at its deadline."""
        try:
            state = trymode.load(self.ctx.host.root)
        except trymode.TryError:  # the sync says so; nothing to time
            state = None
        self.wakeups.alarm(None if state is None else state.deadline)

    def _attempt(self, step: Callable[[T], None], arg: T) -> bool:
        """Run a step; a failure is reported on the node and retried later."""
        try:
            step(arg)
            return True
        except Retarget as e:
            log.info("Update target changed (%s); planning again", e)
            self.wake()
            return True
        except EXPECTED as e:
            self._failed(e)
        except Exception as e:  # a bug: keep the agent alive, say so loudly, retry
            log.exception("Unexpected error in sync")
            self._failed(e)
        return False

    def _sync(self, node: Obj) -> None:
        self.syncs += 1
        ctx = self.ctx
        if ctx.reboot_queued:
            log.info("Node %s is queued for a reboot, skipping sync.", ctx.node_name)
            return
        if self.booting:
            boot(ctx, node)
            self.booting = False
            return
        sync_node(ctx, node, controller_drains=self.options.drain_mode == "controller")

    def _report_drift(self, found: tuple[str, int]) -> None:
        reason, epoch = found
        if epoch != self.ctx.drift.epoch:  # found before an update that is over
            log.info("Not reporting drift found before the last update: %s", reason)
            self.wake()  # the sync decides from the disk as it is now
            return
        log.error("Config drift detected: %s", reason)
        self.metrics.drift(True)
        self.ctx.events.record(Reason.CONFIG_DRIFT_DETECTED, reason)
        self.ctx.status.degraded(reason)
        progress.node_degraded(self.ctx, reason)
        self._retry_later()

    def _failed(self, error: Exception) -> None:
        reason = str(error) or type(error).__name__
        if isinstance(error, MissingConfig):
            self._wait_for_config(error.name)
        try:
            if isinstance(error, Unreconcilable):
                self.ctx.status.unreconcilable(reason)
            else:
                self.ctx.status.degraded(reason)
            progress.node_degraded(self.ctx, reason)
        except Exception as e:
            log.warning("Could not report the failure on node %s: %s", self.ctx.node_name, e)
        self._retry_later()

    def _retry_later(self) -> None:
        log.info("Retrying sync in %gs", self.wakeups.retry_later())

    def _wait_for_config(self, name: str) -> None:
        """Wake the worker as soon as the missing MachineConfig is created."""
        with self._lock:
            if name in self._waiting_for:
                return
            self._waiting_for.add(name)

        def wait() -> None:
            try:
                if wait_for_machine_config(self.kube, name, self.stop):
                    log.info("MachineConfig %s now exists", name)
                    self.wake()
            finally:
                with self._lock:
                    self._waiting_for.discard(name)

        threading.Thread(target=wait, name=f"wait-{name}", daemon=True).start()

    # -- probes and the kubelet ------------------------------------------------------------

    def healthz(self) -> str:
        for name, thread in self._threads.items():
            if not thread.is_alive():
                return f"{name} thread is not running"
        return ""

    def readyz(self) -> str:
        if self.watch.resource_version is None:
            return f"watch of node {self.options.node_name} not established"
        if not self.first_sync_done:
            return "boot checks not done"
        return ""

    # -- lifecycle -------------------------------------------------------------------------

    def _on_sigterm(self, signum: int, frame: FrameType | None) -> None:
        if self.ctx.guard.sigterm():
            log.info("Got signal %d, shutting down", signum)
            self._signaled = True
            self.stop.set()

    def _on_watch_error(self, error: ApiError) -> None:
        """Upstream's errCh: an x509 error with a kubelet restart deferred ends the agent."""
        if is_x509_error(str(error)) and rebootstrap.deferred(self.ctx.host.root):
            self._x509_error = str(error)
            self.stop.set()

    def _start(self, name: str, target: Callable[[], None]) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        self._threads[name] = thread
        thread.start()

    def _lease_lost(self, why: str) -> None:
        log.error("Stopping: another agent may act on node %s now: %s", self.options.node_name, why)
        self.exit_code = 1
        self.stop.set()

    def run(self) -> int:
        """Serve, take the node, manage it until stopped; the exit code. Raises
        :class:`~mcd.agent.sync.ownership.StartRefused` when the address is taken."""
        signal.signal(signal.SIGTERM, self._on_sigterm)
        signal.signal(signal.SIGINT, self._on_sigterm)
        server = listen(self.options.metrics_url, self.agent_lock, self.metrics.registry,
                        self.healthz, self.readyz)  # fmt: skip
        try:
            if not take_node(self.agent_lock, self.lease, self.stop, self.options.node_name):
                return 0  # stopped while another agent held the node
            try:
                return self._run_holding_lease()
            finally:
                self.lease.release()
                self.agent_lock.release()
        finally:
            server.stop()

    def _run_holding_lease(self) -> int:
        log.info("Starting to manage node: %s", self.options.node_name)
        undo.sweep_in_background()  # an update's preimages go after its report, not before
        log_system_data_in_background(self.ctx.host.root, self.metrics, self.options.node_name)
        try:
            release = read_os_release(self.ctx.host.root)
            self.metrics.set_host_os(release.label, release.os_version)
        except HostError as e:
            log.warning("%s", e)
            self.metrics.set_host_os("unsupported", "")
        wish = self.ctx.wish
        assert wish is not None
        self._start("lease", lambda: self.lease.keep(self.stop, self._lease_lost))
        self._start("watch", lambda: self.watch.run(self.stop))
        self._start("worker", self._work)
        self._start("certificates", lambda: run_certificate_writer(self.ctx, self.stop, self.wake))
        self._start("pinned-images", lambda: pinning.serve(self.pinned, self.stop))
        self._start("release-images", lambda: releaseimage.serve(self.release_images, self.stop))
        self._start("reboot-wish", lambda: wish.watch(self.stop, self.wake))
        if self.options.kubelet_healthz_enabled:
            self._start("kubelet-health", lambda: poll_kubelet(
                self.options.kubelet_healthz_endpoint, self.options.kubelet_interval,
                self.metrics, self.stop,
            ))  # fmt: skip
        if self.logins is not None and self.logins.monitor is not None:
            self._start("logins", partial(self.logins.run, self.stop))
        announced = False
        while not self.stop.wait(0.2):
            if not announced and not self.readyz():
                announced = notify(status=f"managing node {self.options.node_name}", ready=True)
                announced = True
        notify(stopping=True)
        log.info("Stopping: waiting for the current sync to end")
        self.ctx.drift.stop()
        self._threads["worker"].join(timeout=10)
        previouslogs.preserve(self.ctx.host.root)
        code = rebootstrap.after_stop(
            self.ctx.host.root, self.ctx.host.effects.systemd, self._x509_error, self._signaled
        )
        if code is not None:
            self.exit_code = code
        self.ctx.events.flush()
        self.ctx.host.effects.systemd.close()
        return self.exit_code
