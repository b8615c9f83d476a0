"""A watch stream read from a real socket: any split of a chunked body gives the same events,
and a stream cut short ends with one clear ApiError, never a ValueError.

The 5,000-node fleet run logged ``invalid literal for int() with base 16: b''``: the server
closed a watch between two chunks (an empty chunk-size line is the end of the connection);
urllib3 says ``Response ended prematurely`` and raises that ``from None``, but the message
named the ValueError it had suppressed.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcd.cluster.api import ApiError, Kube
from mcd.cluster.wire.transport import Connection

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
HEAD_EOF = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"


def chunked(body: bytes, sizes: list[int]) -> tuple[bytes, list[tuple[int, bytes]]]:
    """``body`` as chunks of ``sizes`` (cycled) and the 0 chunk; with each chunk's end offset
    on the wire and its data."""
    wire, ends, at, i = b"", [], 0, 0
    while at < len(body):
        data = body[at : at + sizes[i % len(sizes)]]
        at, i = at + len(data), i + 1
        wire += b"%x\r\n" % len(data) + data + b"\r\n"
        ends.append((len(wire), data))
    return wire + b"0\r\n\r\n", ends


class OneResponse:
    """A server on 127.0.0.1 that answers one request with ``head`` and ``wire[:cut]``, sent in
    pieces split at ``splits`` (a pause between them, so the reader sees them apart), then
    closes the connection."""

    def __init__(self, head: bytes, wire: bytes, splits: list[int]) -> None:
        self.head, self.wire, self.splits = head, wire, sorted(set(splits))
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        conn, _ = self.listener.accept()
        with conn:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            request = b""
            while b"\r\n\r\n" not in request:
                request += conn.recv(4096)
            conn.sendall(self.head)
            at = 0
            for split in [*self.splits, len(self.wire)]:
                if split > at:
                    conn.sendall(self.wire[at:split])
                    time.sleep(0.001)
                    at = split
        self.listener.close()

    def events(self) -> Iterator[dict[str, object]]:
        kube = Kube(Connection(f"http://127.0.0.1:{self.port}"), timeout=10)
        try:
            yield from kube.stream("/api/v1/nodes", {}, timeout=10)
        finally:
            self.thread.join(10)
            kube.api.close()


def watch_events(n: int) -> list[dict[str, object]]:
    return [
        {"type": "MODIFIED", "object": {"metadata": {"name": f"n{i}", "resourceVersion": str(i)}}}
        for i in range(n)
    ]


def body_of(events: list[dict[str, object]]) -> bytes:
    return b"".join(json.dumps(e).encode() + b"\n" for e in events)


def read(server: OneResponse) -> tuple[list[dict[str, object]], ApiError | None]:
    got: list[dict[str, object]] = []
    try:
        for event in server.events():
            got.append(event)
    except ApiError as e:
        return got, e
    return got, None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(1, 4),
    sizes=st.lists(st.integers(1, 120), min_size=1, max_size=5),
    splits=st.lists(st.integers(0, 2000), max_size=6),
    data=st.data(),
)
def test_any_split_of_a_chunked_watch_gives_its_events_and_a_cut_one_a_clear_error(
    n: int, sizes: list[int], splits: list[int], data: st.DataObject
) -> None:
    events = watch_events(n)
    wire, ends = chunked(body_of(events), sizes)
    cut = data.draw(st.integers(0, len(wire)), label="cut")
    server = OneResponse(HEAD, wire[:cut], [s % (cut + 1) for s in splits])
    got, error = read(server)
    delivered = b"".join(chunk for end, chunk in ends if end <= cut)
    whole = [json.loads(line) for line in delivered.split(b"\n")[:-1]]
    assert got == whole  # every event the cut left whole, in order, and nothing else
    if cut >= len(wire) - 4:  # the last chunk's "0" arrived: the body is complete
        assert error is None and got == events
    else:
        assert error is not None, f"a stream cut at byte {cut} of {len(wire)} ended quietly"
        assert error.reason == "StreamCut"
        assert f"watch /api/v1/nodes cut short after {len(got)} events" in str(error)
        assert "base 16" not in str(error)


def test_a_stream_cut_between_chunks_says_it_ended_prematurely() -> None:
    """The fleet run's case: whole chunks, then the connection closes before the next size."""
    events = watch_events(3)
    wire, ends = chunked(body_of(events), [40])
    cut = ends[-1][0]  # after the last data chunk, before "0\r\n\r\n"
    got, error = read(OneResponse(HEAD, wire[:cut], [ends[0][0], ends[0][0] + 1]))
    assert got == events
    assert error is not None
    assert str(error).endswith("watch /api/v1/nodes cut short after 3 events "
                               "(Response ended prematurely)")  # fmt: skip


def test_a_chunk_size_line_split_between_cr_and_lf_is_read_whole() -> None:
    events = watch_events(2)
    wire, ends = chunked(body_of(events), [7])
    first_lf = wire.index(b"\r\n") + 1
    got, error = read(OneResponse(HEAD, wire, [1, first_lf, ends[0][0] - 1, ends[0][0] + 1]))
    assert (got, error) == (events, None)


@pytest.mark.parametrize("into", ["one byte", "half", "all but the closing brace"])
def test_a_body_without_chunks_cut_inside_an_event_names_the_partial_event(into: str) -> None:
    """A response read to the connection's end (no chunks) that stops inside an event."""
    first, second = (json.dumps(e).encode() + b"\n" for e in watch_events(2))
    keep = {"one byte": 1, "half": len(second) // 2}.get(into, len(second) - 2)
    got, error = read(OneResponse(HEAD_EOF, first + second[:keep], []))
    assert got == watch_events(1)
    assert error is not None and error.reason == "StreamCut"
    assert str(error).endswith(f"cut short after 1 events ({keep} bytes of an event)")
