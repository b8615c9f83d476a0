"""A stateful Kubernetes API server fake: real HTTP/JSON on 127.0.0.1, for the real clients.

Serves discovery, CRUD, list with field/label selectors, watch (resume from a
resourceVersion, bookmarks, timeouts, 410 Gone), merge / strategic-merge /
JSON patch with 409 on a stale resourceVersion, the pod eviction subresource
(policy/v1 and v1beta1) honouring PodDisruptionBudgets, and server-side dry
run. Faults on demand: drop watches, fail requests, delay, restart with a
compacted history. Every request is logged for counting.
"""

from __future__ import annotations

import contextlib
import copy
import json
import socket
import ssl
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.fakes.apiserver import discovery
from tests.fakes.apiserver.cluster import (
    PDBS,
    PODS,
    STATUS_SUBRESOURCE,
    Cluster,
    lookup,
    selector_matches,
)
from tests.fakes.apiserver.store import ApiError, Obj, Resource, Store, json_patch, merge_patch


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]
    user_agent: str
    status: int = 0

    @property
    def watch(self) -> bool:
        return _bool(self.query.get("watch", ""))

    @property
    def verb(self) -> str:
        if self.method == "GET":
            if self.watch:
                return "watch"
            return "get" if _names_object(self.path) else "list"
        return {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(
            self.method, self.method.lower()
        )


@dataclass
class Fault:
    status: int
    match: Callable[[str, str], bool]
    remaining: int
    user_agent: str = ""  # only requests whose User-Agent starts with this
    message: str = "injected fault"


@dataclass
class Trigger:
    match: Callable[[str, str, bytes], bool]
    action: Callable[[], None]


@dataclass
class Faults:
    rules: list[Fault] = field(default_factory=list)
    triggers: list[Trigger] = field(default_factory=list)
    delay: float = 0.0


def _bool(value: str) -> bool:
    return value.lower() in ("true", "1")  # the 35 client sends "True"


def _names_object(path: str) -> bool:
    parts = [p for p in path.split("/") if p]
    rest = parts[2:] if parts[0] == "api" else parts[3:]
    if rest[:1] == ["namespaces"] and len(rest) >= 3:
        rest = rest[2:]
    return len(rest) >= 2


class FakeApiServer:
    """Start with :meth:`start`; ``url`` is the server address for kubeconfigs."""

    def __init__(
        self,
        port: int = 0,
        bookmark_interval: float = 2.0,
        pod_grace_cap: float = 0.2,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.tls = tls
        """HTTPS with this server-side context (as every real API server), else plain HTTP."""
        self.store = Store()
        self.cluster = Cluster(self.store, pod_grace_cap)
        self.faults = Faults()
        self.requests: list[Request] = []
        self.bookmark_interval = bookmark_interval
        self._port = port
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._connections: set[socket.socket] = set()
        self._drop_generation = 0
        self._end_generation = 0
        self._lock = threading.Lock()
        self.max_watch_seconds = 300.0
        self.watch_lag = 0.0
        """Seconds every watch event is held back (a watch that lags the writes)."""
        self.open_watches = 0
        self.peak_watches = 0
        self.watching: Counter[str] = Counter()  # open watch streams per User-Agent

    # -- lifecycle --------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self._port}"

    def start(self) -> FakeApiServer:
        server = self
        handler = type("Handler", (_Handler,), {"fake": server})
        httpd = ThreadingHTTPServer(("127.0.0.1", self._port), handler, bind_and_activate=False)
        httpd.allow_reuse_address = True
        httpd.daemon_threads = True
        httpd.server_bind()
        httpd.server_activate()
        if self.tls is not None:  # the handshake in the request's thread, not the accept loop
            httpd.socket = self.tls.wrap_socket(
                httpd.socket, server_side=True, do_handshake_on_connect=False
            )
        self._port = httpd.server_address[1]
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop_serving()
        self.cluster.stop()

    def _stop_serving(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        self._drop_all()

    def restart(self, compact: bool = True) -> None:
        """Go away and come back on the same port; with ``compact`` old resourceVersions are gone.
        The cluster goes on meanwhile: a pod evicted just before still finishes terminating (its
        kubelet does not wait for the API server), so pending terminations are kept."""
        self._stop_serving()
        if compact:
            self.store.compact()
        self.start()

    # -- faults -----------------------------------------------------------------------

    def drop_watches(self) -> None:
        """End every open watch abruptly, as a load balancer or an API server rollout would."""
        self._drop_generation += 1
        with self.store.lock:
            self.store.changed.notify_all()

    def end_watches(self) -> None:
        """End every open watch cleanly (the terminating chunk), as the server's own watch
        timeout does: clients resume from their last resourceVersion."""
        self._end_generation += 1
        with self.store.lock:
            self.store.changed.notify_all()

    def fail_next(
        self,
        count: int = 1,
        status: int = 500,
        match: Callable[[str, str], bool] | None = None,
        user_agent: str = "",
        message: str = "injected fault",
    ) -> None:
        """Answer the next ``count`` matching requests (method, path) with ``status``; with
        ``user_agent``, only requests from that client (e.g. the agent, not the test)."""
        self.faults.rules.append(
            Fault(status, match or (lambda _m, _p: True), count, user_agent, message)
        )

    def when(self, match: Callable[[str, str, bytes], bool], action: Callable[[], None]) -> None:
        """Run ``action`` in a thread of its own, once, when a request matches (method, path,
        body): e.g. restart the server the moment an agent reports ``Working``."""
        with self._lock:
            self.faults.triggers.append(Trigger(match, action))

    def _fire(self, method: str, path: str, body: bytes) -> None:
        with self._lock:
            fired = [t for t in self.faults.triggers if t.match(method, path, body)]
            self.faults.triggers = [t for t in self.faults.triggers if t not in fired]
        for trigger in fired:
            threading.Thread(target=trigger.action, daemon=True).start()

    def _drop_all(self) -> None:
        with self._lock:
            conns = list(self._connections)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    # -- helpers for tests ----------------------------------------------------------------

    def create(
        self, plural: str, obj: Obj, namespace: str = "", group: str = "", version: str = "v1"
    ) -> Obj:
        res = lookup(group, version, plural)
        return self.store.create(res, namespace, self.cluster.on_create(res, obj))

    def get(
        self, plural: str, name: str, namespace: str = "", group: str = "", version: str = "v1"
    ) -> Obj:
        return self.store.get(lookup(group, version, plural), namespace, name)

    def patch(
        self, plural: str, name: str, patch: Obj, namespace: str = "", group: str = ""
    ) -> Obj:
        res = lookup(group, "v1", plural)
        return self.store.update(res, namespace, name, lambda o: merge_patch(o, patch))

    def delete(self, plural: str, name: str, namespace: str = "", group: str = "") -> Obj:
        return self.store.delete(lookup(group, "v1", plural), namespace, name)

    def count(
        self, method: str | None = None, path_prefix: str = "", watch: bool | None = None
    ) -> int:
        with self._lock:
            return sum(
                1
                for r in self.requests
                if (method is None or r.method == method)
                and r.path.startswith(path_prefix)
                and (watch is None or r.watch == watch)
            )

    def reset_log(self) -> None:
        with self._lock:
            self.requests.clear()


class _Handler(BaseHTTPRequestHandler):
    fake: FakeApiServer
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    """TCP_NODELAY, as Go's net/http sets on every connection of a real API server: without
    it a response whose headers and body go in two writes waits for the client's delayed
    ACK, 40 ms per request that no real cluster costs."""

    def log_message(self, format: str, *args: Any) -> None:
        return

    def setup(self) -> None:
        super().setup()
        with self.fake._lock:
            self.fake._connections.add(self.connection)

    def finish(self) -> None:
        with self.fake._lock:
            self.fake._connections.discard(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    # -- plumbing ---------------------------------------------------------------------

    def _body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _send(self, code: int, body: Obj) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _dispatch(self, method: str) -> None:
        split = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(split.query, keep_blank_values=True).items()}
        req = Request(method, split.path, query, self.headers.get("User-Agent", ""))
        with self.fake._lock:
            self.fake.requests.append(req)
        body = self._body()
        if self.fake.faults.triggers:
            self.fake._fire(method, split.path, body)
        if self.fake.faults.delay:
            time.sleep(self.fake.faults.delay)
        for rule in self.fake.faults.rules:
            if (
                rule.remaining > 0
                and req.user_agent.startswith(rule.user_agent)
                and rule.match(method, split.path)
            ):
                rule.remaining -= 1
                req.status = rule.status
                self._send(
                    rule.status, ApiError(rule.status, "InternalError", rule.message).status()
                )
                return
        try:
            code, result = self._route(method, split.path, query, body, req)
        except ApiError as e:
            code, result = e.code, e.status()
        except (ValueError, KeyError, TypeError) as e:
            code, result = 400, ApiError(400, "BadRequest", f"bad request: {e}").status()
        req.status = code
        if result is not None:
            self._send(code, result)

    def _route(
        self, method: str, path: str, query: dict[str, str], body: bytes, req: Request
    ) -> tuple[int, Obj | None]:
        static = discovery.document(path)
        if static is not None:
            return 200, static
        parts = [p for p in path.split("/") if p]
        if parts[:2] == ["api", "v1"]:
            group, version, rest = "", "v1", parts[2:]
        elif parts[:1] == ["apis"] and len(parts) >= 3:
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        namespace = ""
        if rest[:1] == ["namespaces"] and len(rest) >= 3:
            namespace, rest = rest[1], rest[2:]
        res = lookup(group, version, rest[0])
        name = rest[1] if len(rest) > 1 else ""
        sub = rest[2] if len(rest) > 2 else ""
        dry_run = query.get("dryRun") == "All"
        if method == "GET" and not name:
            if req.watch:
                _Watch(self, res, namespace, query).run()
                return 0, None
            return 200, self._list(res, namespace, query)
        if method == "GET":
            return 200, self._decorate(res, self.fake.store.get(res, namespace, name))
        if method == "POST" and sub == "eviction" and res is PODS:
            return 201, self.fake.cluster.evict(namespace, name, _json(body))
        if method == "POST":
            obj = _json(body)
            if dry_run:
                return 201, obj
            return 201, self.fake.store.create(
                res, namespace, self.fake.cluster.on_create(res, obj)
            )
        if method == "PUT":
            obj = _json(body)
            expect = obj.get("metadata", {}).get("resourceVersion")
            if dry_run:
                return 200, obj
            return 200, self.fake.store.update(
                res, namespace, name, _subresource(res, sub, lambda _o: obj), expect
            )
        if method == "PATCH":
            return 200, self._patch(res, namespace, name, body, dry_run, sub)
        if method == "DELETE":
            options = _json(body, lenient=True)
            grace = query.get("gracePeriodSeconds", options.get("gracePeriodSeconds"))
            if res is PODS:
                return 200, self.fake.cluster.delete_pod(
                    namespace, name, None if grace is None else float(grace)
                )
            preconditions = options.get("preconditions")
            return 200, self.fake.store.delete(
                res, namespace, name, preconditions if isinstance(preconditions, dict) else None
            )
        raise ApiError(405, "MethodNotAllowed", f"{method} is not supported here")

    def _list(self, res: Resource, namespace: str, query: dict[str, str]) -> Obj:
        fields, labels = query.get("fieldSelector", ""), query.get("labelSelector", "")
        items, rv = self.fake.store.select(
            res,
            namespace,
            lambda o: selector_matches(fields, o, False) and selector_matches(labels, o, True),
        )
        return {
            "kind": f"{res.kind}List",
            "apiVersion": res.api_version,
            "metadata": {"resourceVersion": str(rv)},
            "items": [self._decorate(res, o) for o in items],
        }

    def _decorate(self, res: Resource, obj: Obj) -> Obj:
        return self.fake.cluster.pdb_status(obj) if res is PDBS else obj

    def _patch(
        self, res: Resource, namespace: str, name: str, body: bytes, dry_run: bool, sub: str = ""
    ) -> Obj:
        content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip()
        patch = json.loads(body or b"null")
        if content_type == "application/json-patch+json":
            if not isinstance(patch, list):
                raise ApiError(400, "BadRequest", "json patch must be a list of operations")
            mutate: Callable[[Obj], Obj] = lambda o: json_patch(o, patch)  # noqa: E731
            expect = None
        elif content_type in (
            "application/merge-patch+json",
            "application/strategic-merge-patch+json",
        ):
            if not isinstance(patch, dict):
                raise ApiError(400, "BadRequest", "merge patch must be an object")
            expect = (patch.get("metadata") or {}).get("resourceVersion")
            mutate = lambda o: merge_patch(o, patch)  # noqa: E731
        else:
            raise ApiError(
                415,
                "UnsupportedMediaType",
                f"the body of the request was in an unknown format: {content_type}",
            )
        mutate = _subresource(res, sub, mutate)
        if dry_run:
            return mutate(self.fake.store.get(res, namespace, name))
        return self.fake.store.update(res, namespace, name, mutate, expect)


def _subresource(res: Resource, sub: str, mutate: Callable[[Obj], Obj]) -> Callable[[Obj], Obj]:
    """A custom resource's status subresource: writes to the object keep its status, writes
    to ``/status`` keep everything else, and a spec change bumps the generation."""
    if res.plural not in STATUS_SUBRESOURCE:
        return mutate

    def wrapped(current: Obj) -> Obj:
        before = copy.deepcopy(current)
        new = mutate(current)
        if sub == "status":
            kept = copy.deepcopy(before)
            kept["status"] = new.get("status") or {}
            kept["metadata"]["resourceVersion"] = before["metadata"].get("resourceVersion")
            return kept
        new["status"] = before.get("status") or {}
        if new.get("spec") != before.get("spec"):
            meta = new.setdefault("metadata", {})
            meta["generation"] = int(before["metadata"].get("generation") or 1) + 1
        else:
            new.setdefault("metadata", {})["generation"] = before["metadata"].get("generation", 1)
        return new

    return wrapped


def _json(body: bytes, lenient: bool = False) -> Obj:
    if not body:
        return {}
    try:
        data = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        if lenient:
            return {}  # kubectl may send protobuf DeleteOptions: ignored, as allowed
        raise ApiError(400, "BadRequest", "the body of the request is not JSON") from None
    if not isinstance(data, dict):
        raise ApiError(400, "BadRequest", "the body of the request must be an object")
    return data


class _Watch:
    """One watch stream: chunked JSON lines until timeout, drop, restart or 410."""

    def __init__(
        self, handler: _Handler, res: Resource, namespace: str, query: dict[str, str]
    ) -> None:
        self.h = handler
        self.fake = handler.fake
        self.res = res
        self.namespace = namespace
        self.fields = query.get("fieldSelector", "")
        self.labels = query.get("labelSelector", "")
        self.rv_text = query.get("resourceVersion", "")
        self.bookmarks = _bool(query.get("allowWatchBookmarks", ""))
        timeout = float(query.get("timeoutSeconds") or self.fake.max_watch_seconds)
        self.deadline = time.monotonic() + min(timeout, self.fake.max_watch_seconds)

    def _match(self, obj: Obj) -> bool:
        if self.namespace and obj.get("metadata", {}).get("namespace") != self.namespace:
            return False
        return selector_matches(self.fields, obj, False) and selector_matches(
            self.labels, obj, True
        )

    def _emit(self, event_type: str, obj: Obj) -> None:
        line = json.dumps({"type": event_type, "object": obj}).encode() + b"\n"
        self.h.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
        self.h.wfile.flush()

    def run(self) -> None:
        h, store = self.h, self.fake.store
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        epoch, generation = store.epoch, self.fake._drop_generation
        ending = self.fake._end_generation
        agent = h.headers.get("User-Agent", "")
        with self.fake._lock:
            self.fake.open_watches += 1
            self.fake.watching[agent] += 1
            self.fake.peak_watches = max(self.fake.peak_watches, self.fake.open_watches)
        try:
            if self.rv_text in ("", "0"):
                items, rv = store.select(self.res, self.namespace, self._match)
                for obj in items:
                    self._emit("ADDED", obj)
            else:
                rv = int(self.rv_text)
            last_bookmark = time.monotonic()
            while True:
                with store.lock:
                    try:
                        changes = store.changes_since(rv, self.res.plural)
                    except ApiError as e:
                        self._emit("ERROR", e.status())
                        break
                    seen = store.rv  # every change up to here is in ``changes``
                    if not changes:
                        store.changed.wait(0.2)
                if changes and self.fake.watch_lag:
                    time.sleep(self.fake.watch_lag)
                for change in changes:
                    if self._match(change.obj):
                        self._emit(change.type, change.obj)
                rv = seen
                if store.epoch != epoch or self.fake._drop_generation != generation:
                    h.close_connection = True
                    return  # dropped: no terminating chunk, like a cut connection
                now = time.monotonic()
                if self.bookmarks and now - last_bookmark >= self.fake.bookmark_interval:
                    self._emit("BOOKMARK", {
                        "kind": self.res.kind, "apiVersion": self.res.api_version,
                        "metadata": {"resourceVersion": str(rv)},
                    })  # fmt: skip
                    last_bookmark = now
                if now >= self.deadline or self.fake._end_generation != ending:
                    break
            h.wfile.write(b"0\r\n\r\n")
            h.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, OSError):
            h.close_connection = True
        finally:
            with self.fake._lock:
                self.fake.open_watches -= 1
                self.fake.watching[agent] -= 1
