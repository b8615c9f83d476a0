"""The informer lists in pages (client-go's pager, 500 a page): the cache holds every object
once, trimmed, at the list's resourceVersion; an expired continue token lists once more whole."""

from __future__ import annotations

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
