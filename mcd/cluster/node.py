"""Writes to the agent's own Node: annotations and cordon, through one serialised writer.

The writer keeps the last Node it saw (from its own PATCH responses and, in the agent,
from the Node watch), as upstream's informer cache: a write starts from that copy with no
GET; a stale copy costs one 409, after which the Node is read afresh.

Each write reads the Node, skips the request when nothing would change, and
sends a JSON merge patch that carries the resourceVersion it read: if the Node
changed meanwhile the server answers 409 and the write is redone on the fresh
object (up to ``retries`` times). ``reason`` is cut at 2000 characters, as
upstream's ``%.2000s``.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Mapping

from mcd.cluster.api import MERGE_PATCH, ApiError, Kube, Obj
from mcd.model.vocabulary import REASON_LIMIT, Annotation

log = logging.getLogger(__name__)


def node_path(name: str) -> str:
    return f"/api/v1/nodes/{name}"


def annotations_of(node: Obj) -> dict[str, str]:
    return dict((node.get("metadata") or {}).get("annotations") or {})


def resource_version(node: Obj) -> str:
    return str((node.get("metadata") or {}).get("resourceVersion") or "")


def not_older(node: Obj, than: Obj) -> bool:
    """True unless ``node`` is known to be an older version of ``than``.

    resourceVersions are opaque strings to clients, but every API server in use (etcd
    revisions, and the fake's counter) hands out increasing integers: compared as such when
    both are. A different uid (a Node deleted and registered again) is never older."""
    if (node.get("metadata") or {}).get("uid") != (than.get("metadata") or {}).get("uid"):
        return True
    a, b = resource_version(node), resource_version(than)
    if a.isdigit() and b.isdigit():
        return int(a) >= int(b)
    return True


class NodeWriter:
    """The only path by which the agent changes its Node."""

    def __init__(self, kube: Kube, node_name: str, retries: int = 20) -> None:
        self.kube = kube
        self.node_name = node_name
        self.retries = retries
        self._lock = threading.Lock()
        self.patches = 0
        self._cached: Obj | None = None
        self._written: list[str] = []  # resourceVersions of the agent's own last writes
        self._deferred: dict[str, str | None] = {}

    def get(self) -> Obj:
        """The Node as the API server has it now (a request)."""
        node = self.kube.request("GET", node_path(self.node_name))
        self._cached = node
        return node

    def current(self) -> Obj:
        """The last Node seen (no request), or a fresh one when none was seen yet."""
        return self._cached if self._cached is not None else self.get()

    def observe(self, node: Obj) -> None:
        """A Node from the watch; kept unless the writer already holds a newer version (its
        own PATCH response), so that a lagging watch never rolls back what the agent knows."""
        cached = self._cached
        if cached is None or not_older(node, cached):
            self._cached = node

    def wrote(self, node: Obj) -> bool:
        """True when ``node`` is a version the agent's own write produced (waits for a write
        in flight: its watch event may arrive before its response)."""
        with self._lock:
            return resource_version(node) in self._written

    def set_annotations(self, values: Mapping[str, str | None]) -> Obj:
        """Set (or, with ``None``, remove) annotations; no request when already so. Deferred
        annotations (:meth:`defer_annotations`) go with them."""
        deferred = dict(self._deferred)
        wanted = {
            k: (v[:REASON_LIMIT] if k == Annotation.REASON and v is not None else v)
            for k, v in {**deferred, **values}.items()
        }

        def change(node: Obj) -> Obj | None:
            have = annotations_of(node)
            diff = {k: v for k, v in wanted.items() if have.get(k) != v}
            return {"metadata": {"annotations": diff}} if diff else None

        node = self._update(change)
        for key, value in deferred.items():  # sent (or already so): no longer owed
            if self._deferred.get(key, value) == value:
                self._deferred.pop(key, None)
        return node

    def owes(self, key: str) -> bool:
        """Whether an annotation deferred by :meth:`defer_annotations` is still to be sent."""
        return key in self._deferred

    def defer_annotations(self, values: Mapping[str, str | None]) -> None:
        """Annotations that go with the next :meth:`set_annotations` (a moment later: an
        update's Done or its failure), instead of a request of their own now."""
        self._deferred.update(values)

    def set_unschedulable(
        self, unschedulable: bool, annotations: Mapping[str, str | None] | None = None
    ) -> Obj:
        """Cordon or uncordon, with optional annotations in the same patch."""
        extra = dict(annotations or {})

        def change(node: Obj) -> Obj | None:
            patch: Obj = {}
            if bool((node.get("spec") or {}).get("unschedulable")) != unschedulable:
                patch["spec"] = {"unschedulable": True if unschedulable else None}
            have = annotations_of(node)
            diff = {k: v for k, v in extra.items() if have.get(k) != v}
            if diff:
                patch["metadata"] = {"annotations": diff}
            return patch or None

        return self._update(change)

    def _update(self, change: Callable[[Obj], Obj | None]) -> Obj:
        with self._lock:
            for attempt in range(self.retries):
                node = self.current() if attempt == 0 else self.get()
                patch = change(node)
                if patch is None:
                    return node
                patch.setdefault("metadata", {})["resourceVersion"] = node["metadata"][
                    "resourceVersion"
                ]
                try:
                    self.patches += 1
                    updated = self.kube.request(
                        "PATCH", node_path(self.node_name), body=patch, content_type=MERGE_PATCH
                    )
                    self._cached = updated
                    self._written = [*self._written[-31:], resource_version(updated)]
                    return updated
                except ApiError as e:
                    if e.status != 409:
                        raise ApiError(
                            e.status,
                            e.reason,
                            f'unable to update node "{self.node_name}": {e.message}',
                            e.body,
                        ) from e
                    log.debug("Conflict updating node %s; retrying", self.node_name)
                    time.sleep(random.uniform(0.01, 0.05) * (attempt + 1))
            raise ApiError(
                409, "Conflict", f'unable to update node "{self.node_name}": too many conflicts'
            )
