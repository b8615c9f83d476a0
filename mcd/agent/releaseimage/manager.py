"""Upstream's InternalReleaseImage manager (``pkg/daemon/internalreleaseimage``,
``syncInternalReleaseImage``), for the agent: on a node where the feature was ever active
(``/var/lib/iri-registry`` exists), every ``$MCD_IRI_INTERVAL`` seconds (60, upstream's
``syncRetryInterval``; 300 while it never was), with the InternalReleaseImage ``cluster``
present, the local registry's release bundles go into the MachineConfigNode's
``status.internalReleaseImage`` with each one's ``Available``/``Degraded`` and the node's
``InternalReleaseImageDegraded`` (:mod:`mcd.model.node.releaseimage`); with it gone (or being
deleted) and the registry stopped, both are removed. Unlike upstream, mcd never deletes the
registry's data (``reclaimRegistryStorage``): that is left to the admin."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from datetime import UTC, datetime

from mcd.cluster.api import ApiError, Kube, Obj
from mcd.cluster.mcn import MachineConfigNodeReporter
from mcd.host import iriregistry
from mcd.host.iriregistry import IriRegistry, RegistryError
from mcd.host.rootfs import Root
from mcd.model.node import releaseimage

log = logging.getLogger(__name__)

IRI = "/apis/machineconfiguration.openshift.io/v1/internalreleaseimages/cluster"
INTERVAL_ENV = "MCD_IRI_INTERVAL"
INTERVAL = 60.0
IDLE = 300.0
"""Upstream looks again after 5 minutes on a node where the feature was never active."""


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def interval() -> float:
    try:
        return max(0.5, float(os.environ.get(INTERVAL_ENV) or INTERVAL))
    except ValueError:
        return INTERVAL


class ReleaseImages:
    def __init__(self, kube: Kube, mcn: MachineConfigNodeReporter, root: Root,
                 node: Callable[[], Obj]) -> None:  # fmt: skip
        self.kube, self.mcn, self.root, self.node = kube, mcn, root, node

    def _present(self) -> bool:
        """The InternalReleaseImage ``cluster`` exists and is not being deleted."""
        try:
            iri = self.kube.request("GET", IRI)
        except ApiError as e:
            if e.status != 404:
                raise
            return False
        return not (iri.get("metadata") or {}).get("deletionTimestamp")

    def sync(self) -> float:
        """One look; the seconds until the next."""
        if not iriregistry.activated(self.root):
            return IDLE
        node = self.node()
        if not self._present():
            if iriregistry.listening():  # the registry is still shutting down: wait for it
                log.info("Registry port is still listening, waiting for shutdown before cleanup")
                return interval()
            self.mcn.patch_status(node, releaseimage.cleared)
            return interval()
        try:
            registry = IriRegistry(self.root)
            registry.check()
        except RegistryError as e:
            log.error("No available local InternalReleaseImage registry found: %s", e)
            error, now = str(e), _now()
            self.mcn.patch_status(node, lambda st: releaseimage.unreachable(st, error, now))
            return interval()
        known = self.mcn.status()
        added = []
        for bundle in releaseimage.new_bundles(known, registry.bundle_tags()):
            log.info("New release bundle found: %s", bundle)
            added.append((bundle, registry.pull_spec(registry.release_tag())))
        missing: dict[str, str] = {}
        for release in [*releaseimage.releases_of(known), *({"image": i} for _b, i in added)]:
            image = str(release.get("image") or "")
            try:
                registry.check_image(image)
            except RegistryError as e:
                log.error("Release image %s not available: %s", image, e)
                missing[image] = str(e)
        now = _now()
        self.mcn.patch_status(node, lambda st: releaseimage.refreshed(st, added, missing, now))
        return interval()


def serve(manager: ReleaseImages, stop: threading.Event) -> None:
    """The agent's release-images thread: :meth:`ReleaseImages.sync` until ``stop``."""
    delay = 0.0
    while not stop.wait(delay):
        try:
            delay = manager.sync()
        except (ApiError, RegistryError, OSError) as e:
            log.warning("InternalReleaseImage sync failed: %s", e)
            delay = interval()
        except Exception:  # never the end of the agent
            log.exception("InternalReleaseImage sync failed unexpectedly")
            delay = interval()
