"""The fake API server's state: objects, resourceVersions, watch history, patches.

Objects are plain dicts keyed by resource, namespace and name. Every change
bumps one global resourceVersion and is appended to a bounded history, which
watches replay; a watch from a resourceVersion older than the history answers
410 Gone, as etcd compaction makes a real API server do.
"""

from __future__ import annotations

import copy
import threading
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

Obj = dict[str, Any]


class ApiError(Exception):
    """An error answered as a ``kind: Status`` object."""

    def __init__(
        self, code: int, reason: str, message: str, details: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def status(self) -> Obj:
        body: Obj = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details:
            body["details"] = self.details
        return body


@dataclass(frozen=True)
class Resource:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    short: tuple[str, ...] = ()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


@dataclass(frozen=True)
class Change:
    rv: int
    type: str  # ADDED, MODIFIED, DELETED
    resource: str
    obj: Obj


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def not_found(resource: Resource, name: str) -> ApiError:
    return ApiError(
        404,
        "NotFound",
        f'{resource.plural}{"." + resource.group if resource.group else ""} "{name}" not found',
        {"name": name, "group": resource.group, "kind": resource.plural},
    )


def conflict(resource: Resource, name: str) -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f"Operation cannot be fulfilled on {resource.plural}{'.' + resource.group if resource.group else ''} "
        f'"{name}": the object has been modified; please apply your changes to the latest version '
        "and try again",
        {"name": name, "group": resource.group, "kind": resource.plural},
    )


class Store:
    """All objects of the fake cluster, guarded by one lock with a condition for watchers."""

    def __init__(self, history: int = 10_000) -> None:
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)
        self.rv = 100
        self.objects: dict[tuple[str, str, str], Obj] = {}
        self.history: deque[Change] = deque(maxlen=history)
        self.oldest_rv = self.rv
        self.epoch = 0  # bumped by restarts; watchers of an old epoch end

    # -- bookkeeping ------------------------------------------------------------------

    def _record(self, change_type: str, resource: Resource, obj: Obj) -> None:
        if len(self.history) == self.history.maxlen:
            self.oldest_rv = self.history[0].rv
        self.history.append(Change(self.rv, change_type, resource.plural, copy.deepcopy(obj)))
        self.changed.notify_all()

    def _bump(self, obj: Obj) -> None:
        self.rv += 1
        obj.setdefault("metadata", {})["resourceVersion"] = str(self.rv)

    def compact(self) -> None:
        """Forget all history: every watch resuming from before now gets 410 Gone."""
        with self.lock:
            self.history.clear()
            self.rv += 1000
            self.oldest_rv = self.rv
            self.epoch += 1
            self.changed.notify_all()

    # -- CRUD -------------------------------------------------------------------------

    def get(self, resource: Resource, namespace: str, name: str) -> Obj:
        with self.lock:
            obj = self.objects.get((resource.plural, namespace, name))
            if obj is None:
                raise not_found(resource, name)
            return copy.deepcopy(obj)

    def select(
        self, resource: Resource, namespace: str, match: Callable[[Obj], bool] | None = None
    ) -> tuple[list[Obj], int]:
        with self.lock:
            items = [
                copy.deepcopy(obj)
                for (plural, ns, _), obj in sorted(self.objects.items())
                if plural == resource.plural
                and (not namespace or ns == namespace)
                and (match is None or match(obj))
            ]
            return items, self.rv

    def create(self, resource: Resource, namespace: str, obj: Obj) -> Obj:
        with self.lock:
            meta = obj.setdefault("metadata", {})
            if not meta.get("name") and meta.get("generateName"):
                meta["name"] = meta["generateName"] + uuid.uuid4().hex[:5]
            name = meta.get("name")
            if not name:
                raise ApiError(422, "Invalid", "metadata.name: Required value: name is required")
            involved = obj.get("involvedObject")
            # kube-apiserver (legacyValidateEvent): an Event's namespace is its involvedObject's;
            # one with no involved namespace (a Node's, from client-go) lives in default
            theirs = involved.get("namespace") or "" if isinstance(involved, dict) else ""
            if (
                resource.kind == "Event"
                and isinstance(involved, dict)
                and (namespace != theirs if theirs else namespace not in ("", "default"))
            ):
                raise ApiError(
                    422, "Invalid",
                    f'Event "{name}" is invalid: involvedObject.namespace: Invalid value: '
                    f'"{theirs}": does not match event.namespace',
                )  # fmt: skip
            key = (resource.plural, namespace, name)
            if key in self.objects:
                raise ApiError(
                    409,
                    "AlreadyExists",
                    f'{resource.plural} "{name}" already exists',
                    {"name": name, "kind": resource.plural},
                )
            obj["apiVersion"], obj["kind"] = resource.api_version, resource.kind
            if resource.namespaced:
                meta["namespace"] = namespace
            meta.setdefault("uid", str(uuid.uuid4()))
            meta.setdefault("creationTimestamp", now_iso())
            meta.setdefault("generation", 1)
            self._bump(obj)
            self.objects[key] = obj
            self._record("ADDED", resource, obj)
            return copy.deepcopy(obj)

    def update(
        self,
        resource: Resource,
        namespace: str,
        name: str,
        mutate: Callable[[Obj], Obj],
        expect_rv: str | None = None,
    ) -> Obj:
        """Replace the object with ``mutate(copy)``; 409 when ``expect_rv`` is stale."""
        with self.lock:
            key = (resource.plural, namespace, name)
            current = self.objects.get(key)
            if current is None:
                raise not_found(resource, name)
            if expect_rv and expect_rv != current["metadata"]["resourceVersion"]:
                raise conflict(resource, name)
            new = mutate(copy.deepcopy(current))
            meta = new.setdefault("metadata", {})
            for fixed in ("name", "uid", "creationTimestamp", "namespace"):
                if fixed in current["metadata"]:
                    meta[fixed] = current["metadata"][fixed]
            new["apiVersion"], new["kind"] = resource.api_version, resource.kind
            if current["metadata"].get("deletionTimestamp"):  # set once, as the API server
                meta["deletionTimestamp"] = current["metadata"]["deletionTimestamp"]
            if _strip_meta(new) == _strip_meta(current):
                return copy.deepcopy(current)  # no-op writes do not bump the version
            self._bump(new)
            if (
                meta.get("deletionTimestamp")
                and not meta.get("finalizers")
                and resource.kind != "Pod"
            ):
                del self.objects[key]  # its last finalizer removed: it goes
                self._record("DELETED", resource, new)
                return copy.deepcopy(new)
            self.objects[key] = new
            self._record("MODIFIED", resource, new)
            return copy.deepcopy(new)

    def delete(
        self, resource: Resource, namespace: str, name: str, preconditions: Obj | None = None
    ) -> Obj:
        """Delete (an object with finalizers, but a Pod, only gets its ``deletionTimestamp``
        and goes when an update removes the last of them); with ``preconditions`` (DeleteOptions' uid and resourceVersion) only the
        object they name, else 409 Conflict (as the API server)."""
        with self.lock:
            current = self.objects.get((resource.plural, namespace, name))
            if current is None:
                raise not_found(resource, name)
            meta = current.get("metadata") or {}
            for key in ("uid", "resourceVersion"):
                wanted = (preconditions or {}).get(key)
                if wanted and str(wanted) != str(meta.get(key)):
                    raise ApiError(409, "Conflict", f"Precondition failed: {key} in precondition: "
                                   f"{wanted}, {key} in object meta: {meta.get(key)}")  # fmt: skip
            if meta.get("finalizers") and resource.kind != "Pod":  # held until they are removed
                if not meta.get("deletionTimestamp"):
                    meta["deletionTimestamp"] = now_iso()
                    self._bump(current)
                    self._record("MODIFIED", resource, current)
                return copy.deepcopy(current)
            obj = self.objects.pop((resource.plural, namespace, name))
            self._bump(obj)
            self._record("DELETED", resource, obj)
            return copy.deepcopy(obj)

    # -- watch ------------------------------------------------------------------------

    def changes_since(self, rv: int, plural: str) -> list[Change]:
        with self.lock:
            if rv < self.oldest_rv:
                raise ApiError(410, "Expired", f"too old resource version: {rv} ({self.oldest_rv})")
            return [c for c in self.history if c.rv > rv and c.resource == plural]

    def wait(self, timeout: float) -> None:
        with self.lock:
            self.changed.wait(timeout)


def _strip_meta(obj: Obj) -> Obj:
    clean = copy.deepcopy(obj)
    clean.get("metadata", {}).pop("resourceVersion", None)
    return clean


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch (also used for strategic merge of maps and scalars)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith("$"):
            continue  # strategic-merge directives
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def json_patch(target: Obj, ops: list[dict[str, Any]]) -> Obj:
    """RFC 6902 JSON patch: add, remove, replace, test (enough for annotations and spec)."""
    doc = copy.deepcopy(target)
    for op in ops:
        parts = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
        parent: Any = doc
        for part in parts[:-1]:
            parent = parent[int(part)] if isinstance(parent, list) else parent.setdefault(part, {})
        last = parts[-1]
        kind = op["op"]
        if kind == "test":
            have = parent.get(last) if isinstance(parent, dict) else parent[int(last)]
            if have != op.get("value"):
                raise ApiError(
                    422, "Invalid", f"the server rejected our request: test failed at {op['path']}"
                )
        elif kind in ("add", "replace"):
            if isinstance(parent, list):
                if last == "-":
                    parent.append(op["value"])
                elif kind == "add":
                    parent.insert(int(last), op["value"])
                else:
                    parent[int(last)] = op["value"]
            else:
                if kind == "replace" and last not in parent:
                    raise ApiError(
                        422, "Invalid", f"replace operation does not apply: {op['path']}"
                    )
                parent[last] = op["value"]
        elif kind == "remove":
            if isinstance(parent, list):
                parent.pop(int(last))
            elif last in parent:
                del parent[last]
            else:
                raise ApiError(422, "Invalid", f"remove operation does not apply: {op['path']}")
        else:
            raise ApiError(400, "BadRequest", f"unsupported JSON patch op {kind!r}")
    return doc
