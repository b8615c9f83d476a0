"""Watching the agent's own Node, and only it.

One long-lived request: ``GET /api/v1/nodes?watch=true&fieldSelector=metadata.name=<node>``.
The watch resumes from the last resourceVersion it saw (bookmarks included),
so a dropped connection or a server restart loses nothing; a ``410 Gone``
(history compacted) leads to a fresh list of the one node, which carries the
latest ``desiredConfig``. Failures back off from 0.5 s to 30 s. Nodes are
never listed cluster-wide.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from mcd.cluster.api import ApiError, Kube, Obj

log = logging.getLogger(__name__)

NODES = "/api/v1/nodes"
LIVE_SECONDS = 150.0
"""A watch whose stream is open and that was opened, or delivered an event or a bookmark, this
recently is live: its Node is the server's. A real kube-apiserver sends a field-selected
watch its first bookmark about 120 s after it opened, then one a minute (measured), so a
window shorter than that first wait (it was 120 s) called every freshly resumed watch dead."""


@dataclass
class Backoff:
    """Exponential backoff: ``initial`` doubling up to ``maximum``; reset after a success."""

    initial: float = 0.5
    maximum: float = 30.0
    _current: float = 0.0

    def next(self) -> float:
        self._current = min(self.maximum, self._current * 2) if self._current else self.initial
        return self._current

    def reset(self) -> None:
        self._current = 0.0


class NodeWatch:
    """Calls ``on_node`` with every new version of the Node (a dict), in order."""

    def __init__(
        self,
        kube: Kube,
        node_name: str,
        on_node: Callable[[Obj], None],
        watch_seconds: int = 300,
        backoff: Backoff | None = None,
        on_deleted: Callable[[Obj], None] | None = None,
        on_error: Callable[[ApiError], None] | None = None,
    ) -> None:
        self.kube = kube
        self.on_error = on_error
        self.node_name = node_name
        self.on_node = on_node
        self.on_deleted = on_deleted
        self.watch_seconds = watch_seconds
        self.backoff = backoff or Backoff()
        self.resource_version: str | None = None
        self.relists = 0
        self.reconnects = 0
        self.open = False
        self.heard_at: float | None = None

    def live(self, within: float = LIVE_SECONDS) -> bool:
        """The stream is open and delivered an event or a bookmark in the last ``within``
        seconds: nothing it carries can have been missed (a resync need not read the Node)."""
        heard = self.heard_at
        return self.open and heard is not None and time.monotonic() - heard < within

    def _opened(self) -> None:
        """The server accepted the watch from the last resourceVersion: from here on it
        delivers every change after it (or ends the stream, or says 410)."""
        if self.resource_version:
            self.open, self.heard_at = True, time.monotonic()

    @property
    def selector(self) -> str:
        return f"metadata.name={self.node_name}"

    def run(self, stop: threading.Event) -> None:
        """Watch until ``stop`` is set (checked between events and while backing off)."""
        while not stop.is_set():
            try:
                if self.resource_version is None:
                    self._relist()
                self._watch_once(stop)
                self.open = False
                self.backoff.reset()
            except ApiError as e:
                self.open = False
                delay = self.backoff.next()
                self.reconnects += 1
                log.warning(
                    "Watch of node %s failed (%s); retrying in %.1fs", self.node_name, e, delay
                )
                if self.on_error is not None:
                    self.on_error(e)
                stop.wait(delay)
            except ValueError as e:  # a garbled line: start over from the last version
                self.open = False
                delay = self.backoff.next()
                log.warning("Watch of node %s returned bad data (%s); retrying", self.node_name, e)
                stop.wait(delay)
            except Exception:  # never let the watch die: a dead watch would lose every change
                self.open = False
                delay = self.backoff.next()
                self.reconnects += 1
                self.resource_version = None  # list again: nothing seen since can be trusted
                log.exception("Watch of node %s failed unexpectedly; relisting", self.node_name)
                stop.wait(delay)

    def _relist(self) -> None:
        listing = self.kube.request("GET", NODES, {"fieldSelector": self.selector})
        self.relists += 1
        for item in listing.get("items") or []:
            self.on_node(item)
        self.resource_version = str(listing.get("metadata", {}).get("resourceVersion") or "")

    def _watch_once(self, stop: threading.Event) -> None:
        query = {
            "fieldSelector": self.selector,
            "resourceVersion": self.resource_version,
            "allowWatchBookmarks": True,
            # jittered like client-go's reflector (5-10 min): 5,000 agents started together
            # must not all come back to the API server in the same second
            "timeoutSeconds": int(self.watch_seconds * (1 + random.random())),
        }
        for event in self.kube.stream(
            NODES, query, timeout=2 * self.watch_seconds + 30, opened=self._opened
        ):
            kind, obj = event.get("type"), event.get("object") or {}
            self.open, self.heard_at = kind != "ERROR", time.monotonic()
            if kind == "ERROR":
                if obj.get("code") == 410:
                    log.info(
                        "Watch of node %s expired (%s); listing again",
                        self.node_name,
                        obj.get("message"),
                    )
                    self.resource_version = None
                    return
                raise ApiError.from_status(obj)
            version = (obj.get("metadata") or {}).get("resourceVersion")
            if version:
                self.resource_version = str(version)
            if kind in ("ADDED", "MODIFIED"):
                self.on_node(obj)
            elif kind == "DELETED" and self.on_deleted is not None:
                self.on_deleted(obj)
            if stop.is_set():
                return
