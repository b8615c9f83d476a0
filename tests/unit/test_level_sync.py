"""The pieces of issue 21 that need no agent: which Node is newer, what wakes the worker,
what a settled Node must say, and the reboot-owed record."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcd.agent.safety import owed
from mcd.agent.sync.level import cordoned_by_update, differences
from mcd.agent.sync.wakeups import Wakeups, wake_key
from mcd.cluster.drain import CORDONED_BY
from mcd.cluster.node import not_older
from mcd.cluster.nodelease import identity, machine_of
from mcd.cluster.watch import Backoff
from mcd.host.rootfs import Root
from mcd.model.vocabulary import Annotation


def node(rv: str, uid: str = "u1", **annotations: str) -> dict[str, object]:
    return {"metadata": {"uid": uid, "resourceVersion": rv, "annotations": annotations}}


@given(st.integers(0, 10**12), st.integers(0, 10**12))
def test_not_older_compares_resource_versions_as_numbers(a: int, b: int) -> None:
    assert not_older(node(str(a)), node(str(b))) == (a >= b)


def test_a_node_registered_again_is_never_older() -> None:
    assert not_older(node("5", uid="new"), node("900", uid="old"))


def test_opaque_resource_versions_are_taken_as_newer() -> None:
    assert not_older(node("abc"), node("900"))


def test_wake_key_covers_state_reason_and_uid() -> None:
    base = node("1", **{Annotation.STATE: "Done"})
    assert wake_key(base) != wake_key(node("2", **{Annotation.STATE: "Working"}))
    assert wake_key(base) != wake_key(
        node("2", **{Annotation.STATE: "Done", Annotation.REASON: "x"})
    )
    assert wake_key(base) != wake_key(node("2", uid="u2", **{Annotation.STATE: "Done"}))
    assert wake_key(base) == wake_key(node("2", **{Annotation.STATE: "Done"}))


def test_own_writes_do_not_wake_and_a_wake_up_keeps_a_pending_retry() -> None:
    stop = threading.Event()
    w = Wakeups(Backoff(initial=0.05, maximum=0.05), resync_interval=3600)
    w.node(node("1", **{Annotation.STATE: "Done"}), own_write=False)
    assert w.next(stop).node is not None  # the first version wakes
    w.node(node("2", **{Annotation.STATE: "Degraded"}), own_write=True)
    w.retry_later()
    w.wake()
    assert w.next(stop).drift is None  # the wake-up ...
    woke = threading.Event()

    def worker() -> None:
        w.next(stop)  # ... and then the retry, still due
        woke.set()

    t = threading.Thread(target=worker, daemon=True)
    t.start()
    assert woke.wait(5)
    stop.set()
    t.join(5)


def test_an_alarm_wakes_once_per_deadline_and_none_cancels_it() -> None:
    stop = threading.Event()
    w = Wakeups(Backoff(initial=60, maximum=60), resync_interval=3600)
    w.node(node("1"), own_write=False)
    w.next(stop)  # the first version
    passed = time.time() - 1
    w.alarm(passed)  # a deadline already passed wakes at once
    assert w.next(stop).node is not None
    results: list[object] = []

    def worker() -> None:
        results.append(w.next(stop))

    w.alarm(passed)  # the deadline already spent: nothing is due
    t = threading.Thread(target=worker, daemon=True)
    t.start()
    t.join(1.5)
    assert t.is_alive() and not results
    w.alarm(None)
    w.alarm(time.time() + 0.2)  # a future deadline wakes the waiting worker
    t.join(10)
    assert results and not t.is_alive()


@pytest.mark.parametrize(
    ("annotations", "wrong"),
    [
        ({Annotation.CURRENT_CONFIG: "rc-1", Annotation.STATE: "Done"}, []),
        ({Annotation.CURRENT_CONFIG: "rc-0", Annotation.STATE: "Done"},
         ['currentConfig "rc-0" but on disk "rc-1"']),
        ({Annotation.CURRENT_CONFIG: "rc-1", Annotation.STATE: "Working"}, ['state "Working"']),
        ({Annotation.CURRENT_CONFIG: "rc-1", Annotation.STATE: "Done", Annotation.REASON: "x"},
         ["a reason set"]),
        ({}, ['currentConfig "" but on disk "rc-1"', 'state ""']),
    ],
)  # fmt: skip
def test_differences_name_what_a_settled_node_would_not_say(
    annotations: dict[str, str], wrong: list[str]
) -> None:
    assert differences(node("1", **annotations), "rc-1") == wrong


def test_a_leftover_cordon_or_drain_request_is_seen() -> None:
    assert cordoned_by_update(node("1", **{CORDONED_BY: "rc-2"}), "rc-1")
    assert cordoned_by_update(node("1", **{Annotation.DESIRED_DRAIN: "drain-rc-2"}), "rc-1")
    assert not cordoned_by_update(node("1", **{Annotation.DESIRED_DRAIN: "uncordon-rc-1"}), "rc-1")
    assert not cordoned_by_update(node("1"), "rc-1")


def test_lease_identity_carries_the_machine() -> None:
    assert machine_of(identity("abc123")) == "abc123"
    assert machine_of(identity("")) == ""


def test_reboot_owed_is_bounded_per_boot_and_cleared_by_another_boot(tmp_path: Path) -> None:
    root = Root(str(tmp_path))
    owed.owe(root, "rc-2", "boot-a")
    assert owed.pending_in(root, "boot-a") == owed.Owed("rc-2", "boot-a", 0)
    for n in range(1, owed.LIMIT + 1):
        assert owed.count_request(root, "rc-2", "boot-a").requests == n
    with pytest.raises(owed.RebootNotHappening) as e:
        owed.count_request(root, "rc-2", "boot-a")
    assert str(e.value) == "pending config rc-2 bootID boot-a matches current! Failed to reboot?"
    assert owed.pending_in(root, "boot-b") is None  # rebooted: the record goes
    assert not (tmp_path / owed.OWED.lstrip("/")).exists()


def test_an_unreadable_record_is_ignored_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / owed.OWED.lstrip("/")
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    assert owed.load(Root(str(tmp_path))) is None
