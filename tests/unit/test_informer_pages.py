"""The informer lists in pages (client-go's pager, 500 a page): the cache holds every object
once, trimmed, at the list's resourceVersion; an expired continue token lists once more whole."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mcd.cluster.api import ApiError
from mcd.cluster.informer import PAGE, Informer

Obj = dict[str, Any]


class Pages:
    """The list side of an API server: ``limit``/``continue`` as the real one answers them."""

    def __init__(self, count: int, expire_after: int | None = None) -> None:
        self.objects: list[Obj] = [
            {"metadata": {"name": f"n{i:05d}", "resourceVersion": str(i + 1)}, "big": "x" * 50}
            for i in range(count)
        ]
        self.expire_after = expire_after
        self.queries: list[Obj] = []

    def request(self, method: str, path: str, query: Obj | None = None, **_: Any) -> Obj:
        query = dict(query or {})
        self.queries.append(query)
        meta = {"resourceVersion": "777"}
        token = query.get("continue")
        if token and self.expire_after is not None and len(self.queries) > self.expire_after:
            raise ApiError(410, "Expired", "The provided continue parameter is too old")
        if not query.get("limit"):
            return {"metadata": meta, "items": self.objects}
        start = int(token or 0)
        end = start + int(query["limit"])
        if end < len(self.objects):
            meta["continue"] = str(end)
        return {"metadata": meta, "items": self.objects[start:end]}


def trim(obj: Obj) -> Obj:
    return {"metadata": obj["metadata"]}


@settings(max_examples=30, deadline=None)
@given(count=st.integers(0, 3 * PAGE + 7))
def test_a_list_in_pages_caches_every_object_once_at_the_list_version(count: int) -> None:
    server = Pages(count)
    informer = Informer(server, "/api/v1/nodes", transform=trim, copies=False)  # type: ignore[arg-type]
    informer._relist()
    assert [o["metadata"]["name"] for o in informer.items()] == [
        o["metadata"]["name"] for o in server.objects
    ]
    assert all("big" not in o for o in informer.items())
    assert informer._rv == "777" and informer.synced.is_set()
    assert len(server.queries) == max(1, -(-count // PAGE))
    assert all(q["limit"] == PAGE for q in server.queries)


def test_an_expired_continue_token_lists_once_more_in_one_request() -> None:
    server = Pages(2 * PAGE + 1, expire_after=1)
    informer = Informer(server, "/api/v1/nodes", transform=trim, copies=False)  # type: ignore[arg-type]
    informer._relist()
    assert len(informer.items()) == 2 * PAGE + 1
    assert [bool(q.get("limit")) for q in server.queries] == [True, True, False]
    assert informer._rv == "777"


class Events(Pages):
    """A watch that delivers ``events`` and ends."""

    def __init__(self, events: list[Obj]) -> None:
        super().__init__(0)
        self.events = events

    parsed: list[bytes]

    def stream(self, path: str, query: Obj, timeout: float = 0, skip: Any = None) -> Iterator[Obj]:
        """Each event as the API server writes it (one compact JSON line), ``skip`` asked
        first, as :meth:`mcd.cluster.api.Kube.stream` does."""
        self.parsed = []
        for event in self.events:
            line = json.dumps(event, separators=(",", ":")).encode()
            if skip is None or not skip(line):
                self.parsed.append(line)
                yield json.loads(line)


def node(version: str, labels: dict[str, str], state: str = "Done") -> Obj:
    return {"metadata": {"name": "n1", "resourceVersion": version, "labels": labels,
                         "annotations": {"state": state}}}  # fmt: skip


def test_an_event_that_changes_only_the_resource_version_wakes_nobody() -> None:
    written = node("5", {"role": "a"}, "Working")
    server = Events([
        {"type": "MODIFIED", "object": node("5", {"role": "a"}, "Working")},  # our own echo
        {"type": "MODIFIED", "object": node("6", {"role": "a"}, "Working")},  # a heartbeat
        {"type": "MODIFIED", "object": node("7", {"role": "b"}, "Working")},  # relabelled
        {"type": "DELETED", "object": node("8", {"role": "b"}, "Working")},
    ])  # fmt: skip
    changes: list[str] = []
    diffs: list[tuple[Obj | None, Obj | None]] = []
    informer = Informer(server, "/api/v1/nodes", lambda k, _o: changes.append(k),  # type: ignore[arg-type]
                        copies=False, on_diff=lambda old, new: diffs.append((old, new)))  # fmt: skip
    informer._rv = "4"
    informer.observe(written)
    informer._watch_once(threading.Event())
    assert changes == ["MODIFIED", "DELETED"]
    assert [(o and o["metadata"]["labels"], n and n["metadata"]["labels"]) for o, n in diffs] == [
        ({"role": "a"}, {"role": "b"}), ({"role": "b"}, None)]  # fmt: skip
    assert informer._rv == "8" and informer.items() == []


def test_the_watchs_copy_of_a_version_already_taken_in_is_not_read_again() -> None:
    """This process's own write went into the cache; the watch's copy of that very version
    is neither trimmed again nor compared (half a big rollout's Node events are such echoes),
    and a later version of the same Node is taken in as before."""
    trimmed: list[str] = []

    def counting(obj: Obj) -> Obj:
        trimmed.append(obj["metadata"]["resourceVersion"])
        return obj

    server = Events([
        {"type": "MODIFIED", "object": node("5", {"role": "a"}, "Working")},  # our own echo
        {"type": "MODIFIED", "object": node("6", {"role": "a"}, "Done")},
    ])  # fmt: skip
    changes: list[str] = []
    informer = Informer(server, "/api/v1/nodes", lambda k, _o: changes.append(k),  # type: ignore[arg-type]
                        copies=False, transform=counting)  # fmt: skip
    informer._rv = "4"
    informer.observe(node("5", {"role": "a"}, "Working"))
    informer._watch_once(threading.Event())
    assert trimmed == ["5", "6"], "the observed write once, the echo never, the next version once"
    assert changes == ["MODIFIED"]
    assert informer.items()[0]["metadata"]["resourceVersion"] == "6"


def test_the_watchs_line_of_an_own_write_is_not_even_parsed() -> None:
    """The MODIFIED line of a version :meth:`Informer.observe` took in is skipped unparsed,
    the watch resumes after it; any other line (another version, a bookmark or a deletion
    at a version this process wrote) is parsed as before."""
    mine = node("5", {"role": "a"}, "Working")
    server = Events([
        {"type": "MODIFIED", "object": {"kind": "Node", "apiVersion": "v1", **mine}},
        {"type": "MODIFIED", "object": node("6", {"role": "a"}, "Done")},
        {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "7"}}},
        {"type": "DELETED", "object": node("7", {"role": "a"}, "Done")},
    ])  # fmt: skip
    informer = Informer(server, "/api/v1/nodes", copies=False)  # type: ignore[arg-type]
    informer._rv = "4"
    informer.observe(mine)
    informer.observe(node("7", {"role": "a"}, "Done"))  # its DELETED line is still read
    informer._watch_once(threading.Event())
    assert [json.loads(line)["type"] for line in server.parsed] == ["MODIFIED", "BOOKMARK",
                                                                     "DELETED"]  # fmt: skip
    assert b'"resourceVersion":"5"' not in b"".join(server.parsed)
    assert informer._rv == "7" and informer.items() == []
    informer.observe(node("6", {"role": "a"}, "Done"))  # an answer later than its line
    assert informer._echoes == {"7": None}, "no version kept whose line has gone by"
