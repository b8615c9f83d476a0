"""A cache of every object of one resource, kept by a list and then a watch (an informer).

The controller reads Nodes, MachineConfigPools and MachineConfigs from these caches,
as upstream's listers, so a sync costs no request: only writes go to the API server.
The watch resumes from the last resourceVersion (bookmarks included); a ``410 Gone``
lists again; failures back off from 0.5 s to 30 s. ``on_change`` is called after each
change the cache takes in (never while holding the cache's lock); ``on_diff`` before it, with
the object before and after (None when there was none: added, or deleted). An event that
changes nothing but the resourceVersion of what the cache keeps (the watch's echo of an object
this process wrote and :meth:`Informer.observe`, or a Node's heartbeat once ``transform``
dropped its times) is taken in without either call: nothing a reader reads changed. The echo
of a write :meth:`Informer.observe` took in is not even parsed.

``transform`` keeps only what the reader needs of each object (at 5,000 Nodes a full Node,
images and managedFields included, is most of a controller's memory); ``copies=False`` hands
out the cached objects themselves, for readers that never change them (each change replaces
an object whole, so a reader's snapshot never moves under it).
"""

from __future__ import annotations

import copy
import logging
import random
import re
import threading
from collections.abc import Callable, Mapping

from mcd.cluster.api import ApiError, Kube, Obj
from mcd.cluster.watch import Backoff

log = logging.getLogger(__name__)

PAGE = 500
"""Objects per list request (client-go's pager's default)."""
ECHOES = 20_000
"""Versions of this process's own writes kept until the watch shows them (past that, the
oldest are forgotten: their echoes are then parsed and dropped as before)."""
_MODIFIED = re.compile(rb'\{\s*"type"\s*:\s*"MODIFIED"')
_VERSION = re.compile(rb'"resourceVersion"\s*:\s*"([0-9]+)"')


class Informer:
    def __init__(
        self,
        kube: Kube,
        path: str,
        on_change: Callable[[str, Obj], None] | None = None,
        watch_seconds: int = 300,
        transform: Callable[[Obj], Obj] | None = None,
        copies: bool = True,
        on_diff: Callable[[Obj | None, Obj | None], None] | None = None,
        selector: Mapping[str, str] | None = None,
    ) -> None:
        self.kube = kube
        self.path = path
        self.selector = dict(selector or {})
        """``fieldSelector`` / ``labelSelector`` for the list and the watch (one named object,
        or the labelled ones)."""
        self.on_change = on_change
        self.on_diff = on_diff
        self.transform = transform
        self.copies = copies
        self.watch_seconds = watch_seconds
        self.backoff = Backoff()
        self.synced = threading.Event()
        self.relists = 0
        self._items: dict[str, Obj] = {}
        self._order: list[str] | None = None
        """The names, sorted; None once one was added or removed (a pass at 5,000 Nodes
        sorted them every time)."""
        self._lock = threading.Lock()
        self._rv: str | None = None
        self._echoes: dict[str, None] = {}
        """The versions :meth:`observe` took in whose watch events have not come yet."""

    def items(self) -> list[Obj]:
        """The cached objects (copies unless ``copies=False``), by name."""
        with self._lock:
            if self._order is None:
                self._order = sorted(self._items)
            items = [self._items[k] for k in self._order]
        return [copy.deepcopy(o) for o in items] if self.copies else items

    def get(self, name: str) -> Obj | None:
        with self._lock:
            obj = self._items.get(name)
        return copy.deepcopy(obj) if obj is not None and self.copies else obj

    def observe(self, obj: Obj) -> None:
        """Take in an object this process just wrote (newer than the watch may have shown)."""
        self._put(obj, notify=False)
        version = (obj.get("metadata") or {}).get("resourceVersion")
        if version and _rv(obj) > _rv({"metadata": {"resourceVersion": self._rv}}):
            with self._lock:  # its line is still to come (the watch goes in version order)
                self._echoes[str(version)] = None
                if len(self._echoes) > ECHOES:
                    del self._echoes[next(iter(self._echoes))]

    def _echo(self, line: bytes) -> bool:
        """Whether a watch line is the MODIFIED event of a version :meth:`observe` took in:
        the object the write's answer carried, so the line is not even parsed (at 10,000
        nodes half the controller's Node events). A resourceVersion names one write of one
        object, and the object's own is the first in its line (metadata comes first)."""
        if not self._echoes or not _MODIFIED.match(line):
            return False
        found = _VERSION.search(line, 0, 4096)
        if found is None:
            return False
        version = found.group(1).decode("ascii")
        with self._lock:
            if version not in self._echoes:
                return False
            del self._echoes[version]
        self._rv = version
        return True

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                if self._rv is None:
                    self._relist()
                self._watch_once(stop)
                self.backoff.reset()
            except (ApiError, ValueError) as e:
                delay = self.backoff.next()
                log.warning("Watch of %s failed (%s); retrying in %.1fs", self.path, e, delay)
                stop.wait(delay)
            except Exception:  # never let a watch die: the cache would go stale silently
                delay = self.backoff.next()
                self._rv = None
                log.exception("Watch of %s failed unexpectedly; listing again", self.path)
                stop.wait(delay)

    def _relist(self) -> None:
        """Every object, :data:`PAGE` at a time (client-go's pager: at 5,000 Nodes one
        list's body and its parsed objects were most of a controller's peak memory); an
        expired continue token (410) lists once more in one request."""
        trim = self.transform or (lambda o: o)
        fresh: dict[str, Obj] = {}
        token, version = "", ""
        while True:
            try:
                listing = self.kube.request(
                    "GET", self.path, {**self.selector, "limit": PAGE, "continue": token or None}
                )
            except ApiError as e:
                if e.status != 410 or not token:
                    raise
                fresh, token = {}, ""
                listing = self.kube.request("GET", self.path, dict(self.selector))
            fresh.update((_name(o), trim(o)) for o in listing.get("items") or [])
            meta = listing.get("metadata") or {}
            version = str(meta.get("resourceVersion") or version)
            token = str(meta.get("continue") or "")
            del listing
            if not token:
                break
        self.relists += 1
        with self._lock:
            self._items, self._order = fresh, None
        self._rv = version
        self.synced.set()
        if self.on_change is not None:
            self.on_change("SYNC", {})

    def _watch_once(self, stop: threading.Event) -> None:
        query = {
            **self.selector,
            "resourceVersion": self._rv,
            "allowWatchBookmarks": True,
            "timeoutSeconds": int(self.watch_seconds * (1 + random.random())),
        }
        for event in self.kube.stream(
            self.path, query, timeout=2 * self.watch_seconds + 30, skip=self._echo
        ):
            kind, obj = event.get("type"), event.get("object") or {}
            if kind == "ERROR":
                if obj.get("code") == 410:
                    self._rv = None
                    return
                raise ApiError.from_status(obj)
            version = (obj.get("metadata") or {}).get("resourceVersion")
            if version:
                self._rv = str(version)
            if kind in ("ADDED", "MODIFIED"):
                self._put(obj, notify=True, kind=str(kind))
            elif kind == "DELETED":
                with self._lock:
                    gone = self._items.pop(_name(obj), None)
                    self._order = None
                if self.on_diff is not None:
                    self.on_diff(gone, None)
                if self.on_change is not None:
                    self.on_change("DELETED", obj)
            if stop.is_set():
                return

    def _put(self, obj: Obj, notify: bool, kind: str = "MODIFIED") -> None:
        name = _name(obj)
        version = (obj.get("metadata") or {}).get("resourceVersion")
        if notify and version:
            with self._lock:
                have = self._items.get(name)
            if have is not None and (have.get("metadata") or {}).get("resourceVersion") == version:
                return  # the watch's copy of a version already in (this process's own write)
        if self.transform is not None:
            obj = self.transform(obj)
        with self._lock:
            have = self._items.get(name)
            if have is not None and _rv(have) > _rv(obj):
                return  # never go back to an older version
            if have is None:
                self._order = None
            self._items[name] = obj
        if not notify or (have is not None and _same_but_version(have, obj)):
            return
        if self.on_diff is not None:
            self.on_diff(have, obj)
        if self.on_change is not None:
            self.on_change(kind, obj)


def _name(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def _same_but_version(a: Obj, b: Obj) -> bool:
    """Whether two versions of an object differ in nothing but ``metadata.resourceVersion``."""
    meta_a, meta_b = a.get("metadata") or {}, b.get("metadata") or {}
    if len(a) != len(b) or len(meta_a) != len(meta_b):
        return False
    if any(k not in a or a[k] != v for k, v in b.items() if k != "metadata"):
        return False
    return all(k in meta_a and (k == "resourceVersion" or meta_a[k] == v)
               for k, v in meta_b.items())  # fmt: skip


def _rv(obj: Obj) -> int:
    try:
        return int((obj.get("metadata") or {}).get("resourceVersion") or 0)
    except ValueError:
        return 0
