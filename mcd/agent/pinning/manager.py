"""Upstream's ``PinnedImageSetManager`` (``pkg/daemon/pinned_image_set.go``): for the
node's pool (the one its MachineConfigNode names), every PinnedImageSet in
``spec.pinnedImageSets`` is pulled over the CRI after the space check (16Gi of allocatable
ephemeral storage left), ``/etc/crio/crio.conf.d/50-pinned-images`` lists every image and
CRI-O is reloaded, and the MachineConfigNode says how it went: ``status.pinnedImageSets``,
``PinnedImageSetsProgressing``, ``PinnedImageSetsDegraded``. A sync whose sets are all pinned
at their generation, with the drop-in as it should be, writes nothing.

The images are pulled through the node's own runtime (:mod:`mcd.host.runtime`: the one the
kubelet reports in ``containerRuntimeVersion``, else the host's), over its CRI socket. On
containerd the pulls are the same; there is no CRI-O drop-in to write and nothing to reload:
containerd 1.6 has no setting that keeps an image from the kubelet's garbage collection, so
mcd pulls and reports, and says so once in its log.

As upstream's informers, watches of the PinnedImageSets and MachineConfigPools
(:func:`watch_changes`) wake a sync on any change, and a sync reads the pool and its sets from
their caches (an idle agent's sync costs no request); the poll every
``$MCD_PINNED_IMAGES_INTERVAL`` seconds (30) stays only as a resync. Where the API has no
PinnedImageSets, or the agent may not watch them, the poll alone runs, with GETs.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from mcd.cluster.api import ApiError, Kube, Obj
from mcd.cluster.informer import Informer
from mcd.cluster.mcn import MachineConfigNodeReporter
from mcd.cluster.node import node_path
from mcd.host import runtime as host_runtime
from mcd.host.cri import Cri, CriError
from mcd.host.errors import HostError
from mcd.host.fs import fsops
from mcd.host.rootfs import Root
from mcd.host.systemd.manager import SystemdManager
from mcd.model.node import pinned as p
from mcd.model.node import runtime as rt
from mcd.model.node.mcn import pool_of

log = logging.getLogger(__name__)

API = "/apis/machineconfiguration.openshift.io/v1"
INTERVAL_ENV = "MCD_PINNED_IMAGES_INTERVAL"
RETRY_ENV = "MCD_PINNED_IMAGES_RETRY_SCALE"
BACKOFF = (1.0, 2.0, 4.0, 8.0)
"""Upstream's pull backoff: 5 tries, 1s doubling, capped at 10s."""
CRIO = "crio.service"
MAX_RETRY_DELAY = 300.0
"""A failed sync is tried again after 2s, doubling up to this (upstream's rate-limited
requeue), or at once when the sets or the node change."""


class NotListedYet(Exception):
    """A watched resource whose cache has not listed yet: the sync waits for it."""


class SyncFailed(Exception):
    """A sync that ends in ``PinnedImageSetsDegraded``; ``str()`` is upstream's error."""


class PinnedImages:
    def __init__(
        self,
        kube: Kube,
        node_name: str,
        root: Root,
        systemd: SystemdManager,
        reporter: MachineConfigNodeReporter,
        cri: Cri | None = None,
        *,
        minimum: int = p.MIN_FREE_AFTER_PREFETCH,
        backoff: Sequence[float] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        known_node: Callable[[], Obj | None] = lambda: None,
    ) -> None:
        """``known_node``: the Node the agent's live watch holds (None: read it)."""
        self.kube, self.node_name, self.root = kube, node_name, root
        self.known_node = known_node
        self.systemd, self.reporter = systemd, reporter
        self.cri = cri or Cri(root)
        self._cri_given = cri is not None
        self.runtime = ""
        """The node's runtime as the last sync found it ('' not known: CRI-O, as upstream)."""
        self.minimum = minimum
        scale = float(os.environ.get(RETRY_ENV) or 1.0)
        self.backoff = tuple(backoff if backoff is not None else (d * scale for d in BACKOFF))
        self.sleep = sleep
        self.done: dict[str, int] = {}
        """uid -> generation of each set pulled and pinned."""
        self._failed: tuple[object, str, float, float] | None = None
        """After a failure: what it was tried on, the error, when to try again, the delay."""
        self.caches: Mapping[str, Informer] = {}
        """The watches' caches of pools and sets, by resource (:func:`watch_changes`)."""

    # -- reading the cluster --------------------------------------------------------------

    def _sets(self, node: Obj) -> list[p.ImageSet] | None:
        """The sets of the node's pool; None when the pool does not exist (nothing to do)."""
        pool = self._read(
            "machineconfigpools", pool_of((node.get("metadata") or {}).get("labels") or {})
        )
        if pool is None:
            return None
        found = []
        for name in p.pool_set_names(pool):
            obj = self._read("pinnedimagesets", name)
            if obj is None:
                raise SyncFailed(
                    f'failed to get PinnedImageSet "{name}": pinnedimagesets.'
                    f'machineconfiguration.openshift.io "{name}" not found'
                )
            found.append(p.image_set(obj))
        return found

    def _read(self, resource: str, name: str) -> Obj | None:
        """One object: from the watch's cache (upstream's listers: a sync costs no request;
        :class:`NotListedYet` until it has listed), else a GET; None when it does not exist."""
        cache = self.caches.get(resource)
        if cache is not None:
            if not cache.synced.is_set():  # its first list wakes the sync again
                raise NotListedYet(resource)
            return cache.get(name)
        try:
            return self.kube.request("GET", f"{API}/{resource}/{name}")
        except ApiError as e:
            if e.status == 404:
                return None
            raise

    # -- one sync -------------------------------------------------------------------------

    def sync(self) -> str | None:
        """One pass; the error reported, or None. Errors reading the cluster are logged and
        left for the next pass."""
        try:
            node = self.known_node() or self.kube.request("GET", node_path(self.node_name))
        except ApiError as e:
            log.warning("Pinned images: cannot read node %s: %s", self.node_name, e)
            return None
        try:
            sets = self._sets(node)
        except NotListedYet as e:
            log.debug("Pinned images: %s not listed yet", e)
            return None
        except ApiError as e:
            log.warning("Pinned images: cannot read the pool's PinnedImageSets: %s", e)
            return None
        except SyncFailed as e:
            self._report_error(node, [], str(e))
            return str(e)
        if sets is None:
            return None
        self._find_runtime(node)
        images = p.unique_sorted(i for s in sets for i in s.images)
        if self._settled(sets, images):
            self._failed = None
            return None
        key = (tuple((s.uid, s.generation) for s in sets), repr(node.get("status")))
        failed = self._failed
        if failed is not None and failed[0] == key and time.monotonic() < failed[2]:
            return failed[1]  # the same inputs failed a moment ago: wait before trying again
        entries = p.set_entries(sets, self.done, None)
        self.reporter.report(
            node, p.progressing(self.node_name), fields={"pinnedImageSets": entries}
        )
        try:
            self._prefetch(node, sets)
            self._pin(images)
        except SyncFailed as e:
            log.error("%s", e)
            self._report_error(node, sets, str(e))
            delay = min(MAX_RETRY_DELAY, failed[3] * 2) if failed and failed[0] == key else 2.0
            scaled = delay * float(os.environ.get(RETRY_ENV) or 1.0)
            self._failed = (key, str(e), time.monotonic() + scaled, delay)
            return str(e)
        for s in sets:
            self.done[s.uid] = s.generation
        entries = p.set_entries(sets, self.done, None)
        progressing, degraded = p.completed()
        self.reporter.report(node, progressing, fields={"pinnedImageSets": entries})
        self.reporter.report(node, degraded)
        log.info("%s", p.ALL_COMPLETE)
        return None

    def _find_runtime(self, node: Obj) -> None:
        """The runtime to pull through: the kubelet's report, else the host's; the CRI
        client on its socket (unless the agent was given one)."""
        choice = host_runtime.detect(self.root, rt.node_runtime_version(node))
        if choice.name != self.runtime:
            log.info(
                "Pinned images: pulling through %s (%s)", choice.name or "cri-o", choice.source
            )
            if choice.name == rt.CONTAINERD:
                log.info(
                    "Pinned images: containerd has no pinned-images setting; images are "
                    "pulled, not kept from the kubelet's image garbage collection"
                )
        self.runtime = choice.name
        if not self._cri_given and choice.socket and choice.socket != self.cri.socket:
            self.cri = Cri(self.root, socket=choice.socket)

    def retry_at(self) -> float | None:
        """The monotonic time a failed sync is due again (upstream's rate-limited requeue)."""
        return self._failed[2] if self._failed is not None else None

    def _settled(self, sets: list[p.ImageSet], images: list[str]) -> bool:
        """Every set pinned at its generation and the drop-in as it should be."""
        if any(self.done.get(s.uid) != s.generation for s in sets):
            return False
        if self.runtime == rt.CONTAINERD:  # no drop-in: pulled is pinned as far as it goes
            return True
        return self._dropin() == (p.crio_dropin(images) if images else None)

    def _report_error(self, node: Obj, sets: list[p.ImageSet], error: str) -> None:
        entries = p.set_entries(sets, self.done, error)
        self.reporter.report(node, p.degraded(), fields={"pinnedImageSets": entries or None})

    def _prefetch(self, node: Obj, sets: list[p.ImageSet]) -> None:
        for s in sets:
            if self.done.get(s.uid) == s.generation:
                continue
            log.info("Reconciling pinned image set: %s: generation: %d", s.name, s.generation)
            problem = p.node_problem(node, self.minimum)
            if problem:
                raise SyncFailed(problem)
            for image in s.images:
                self._ensure_pulled(image)

    def _ensure_pulled(self, image: str) -> None:
        """Upstream ``ensurePullImage``: nothing when the runtime has it, else pulls with
        backoff; a full disk fails at once."""
        if self._present(image):
            return
        for tries, delay in enumerate((*self.backoff, None), start=1):
            try:
                self.cri.pull(image)
                log.info("image %r pulled", image)
                return
            except CriError as e:
                error = str(e)
            if p.is_no_space(error) or delay is None:
                raise SyncFailed(p.pull_failure(image, tries, error, no_space=p.is_no_space(error)))
            self.sleep(delay)

    def _present(self, image: str) -> bool:
        try:
            return self.cri.image_present(image)
        except CriError as e:
            raise SyncFailed(str(e)) from e

    def _dropin(self) -> bytes | None:
        try:
            return self.root.read_bytes(p.CRIO_DROPIN)
        except OSError:
            return None

    def _pin(self, images: list[str]) -> None:
        """Upstream ``syncMachineConfigPools``' end: every image still there, then the drop-in
        (removed when no image is pinned) and a reload of CRI-O when it changed."""
        for image in images:
            if not self._present(image):
                raise SyncFailed(f"{p.FAILED_TO_PULL}: image removed during sync: {image}")
        if self.runtime == rt.CONTAINERD:
            return
        wanted = p.crio_dropin(images) if images else None
        have = self._dropin()
        if (have or b"").strip() == (wanted or b"").strip() and (have is None) == (wanted is None):
            log.info("CRI-O config file is up to date, no reload required")
            return
        try:
            if wanted is None:
                fsops.remove(self.root, p.CRIO_DROPIN)
                log.info("removed crio config file: %s", p.CRIO_DROPIN)
            else:
                fsops.write_file(self.root, p.CRIO_DROPIN, wanted, 0o644)
            self.systemd.reload(CRIO)
        except (HostError, OSError) as e:
            raise SyncFailed(
                f"could not apply update: reloading crio configuration failed. Error: {e}"
            ) from e


@dataclass
class Watches:
    """What :func:`watch_changes` started: ``wake`` is set on every change they see (and once
    each has listed); ``caches`` hold what a sync reads, by resource."""

    wake: threading.Event
    caches: dict[str, Informer] = field(default_factory=dict)


def _pool_fields(obj: Obj) -> Obj:
    meta = obj.get("metadata") or {}
    return {
        "metadata": {k: meta.get(k) for k in ("name", "resourceVersion")},
        "spec": {"pinnedImageSets": (obj.get("spec") or {}).get("pinnedImageSets")},
    }


def _set_fields(obj: Obj) -> Obj:
    meta = obj.get("metadata") or {}
    return {
        "metadata": {k: meta.get(k) for k in ("name", "uid", "generation", "resourceVersion")},
        "spec": {"pinnedImages": (obj.get("spec") or {}).get("pinnedImages")},
    }


WATCHED: dict[str, Callable[[Obj], Obj]] = {
    "pinnedimagesets": _set_fields,
    "machineconfigpools": _pool_fields,
}
"""Each watched resource, with the fields a sync reads of it (all its cache keeps)."""


def watch_changes(kube: Kube, stop: threading.Event) -> Watches:
    """Start watches of the PinnedImageSets and MachineConfigPools. A resource the API server
    does not serve, or the agent may not list, is not watched: its reads stay GETs."""
    watches = Watches(threading.Event())
    for resource, fields in WATCHED.items():
        path = f"{API}/{resource}"
        try:
            kube.request("GET", path, {"limit": 1})
        except ApiError as e:  # any other failure: the watch itself retries, backing off
            if e.status in (403, 404):
                log.info("Pinned images: not watching %s (%s); polling only", resource, e.status)
                continue
        informer = Informer(
            kube, path, on_change=lambda _k, _o: watches.wake.set(), transform=fields,
            copies=False,
        )  # fmt: skip
        watches.caches[resource] = informer
        threading.Thread(
            target=informer.run, args=(stop,), name=f"pinned-watch-{resource}", daemon=True
        ).start()
    return watches


def run(
    manager: PinnedImages,
    stop: threading.Event,
    interval: float | None = None,
    watches: Watches | None = None,
) -> None:
    """Sync when a watch wakes it (a change), else every ``interval`` seconds
    (``$MCD_PINNED_IMAGES_INTERVAL``, else 30), until ``stop``; a failed sync is tried again
    when its backoff is over (2 s doubling up to 5 minutes), or at a change. With ``watches``,
    a sync reads the pool and its sets from their caches."""
    every = interval or float(os.environ.get(INTERVAL_ENV) or 30.0)
    wake = watches.wake if watches is not None else threading.Event()
    if watches is not None:
        manager.caches = watches.caches
    while not stop.is_set():
        wake.clear()
        try:
            manager.sync()
        except Exception:  # a bug: keep the agent alive and say so
            log.exception("Unexpected error syncing pinned images")
        deadline = time.monotonic() + every
        retry = manager.retry_at()
        if retry is not None:  # the backoff's time, but never sooner than 2 s or the poll
            deadline = min(deadline, max(retry, time.monotonic() + min(every, 2.0)))
        while not stop.is_set() and not wake.is_set() and time.monotonic() < deadline:
            wake.wait(min(0.5, max(0.0, deadline - time.monotonic())))


def serve(manager: PinnedImages, stop: threading.Event) -> None:
    """The agent's pinned-images thread: the watches, then :func:`run` on them."""
    run(manager, stop, watches=watch_changes(manager.kube, stop))
