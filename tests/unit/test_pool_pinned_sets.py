"""A pool's ``spec.pinnedImageSets`` from the PinnedImageSets its ``machineConfigSelector``
selects (upstream's pinned image set controller): written through the controller's pass,
sorted, replacing the list (a set no longer selected is dropped, none: the field removed),
a pool with the selector ``{}`` skipped, ``PinnedImageSetsDegraded`` False after the write
and True with upstream's text when the write fails, nothing without the API."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from mcd.cluster.api import ApiError
from mcd.controller.pinnedsets import FRESH, PoolPinnedSets, selected_sets
from mcd.controller.sync import Snapshot, Syncer
from mcd.model.pool.pools import selector_matches
from tests.unit.test_controller_sync import NOW, Writer, pool

Obj = dict[str, Any]
ROLE = "machineconfiguration.openshift.io/role"


def pis(name: str, **labels: str) -> Obj:
    return {"metadata": {"name": name, "labels": labels}, "spec": {"pinnedImages": []}}


class NoMachineConfigNodes:
    def request(self, method: str, path: str, *args: Any, **kwargs: Any) -> Obj:
        assert (method, path.rsplit("/", 1)[-1]) == ("GET", "machineconfignodes")
        return {"items": []}


def one_pass(writer: Writer, p: Obj) -> Obj:
    """One controller pass; the pool's conditions as written (by type)."""
    writer.pools[p["metadata"]["name"]] = p
    writer.kube = NoMachineConfigNodes()  # type: ignore[attr-defined]
    syncer = Syncer(writer, "0.1.0", clock=lambda: NOW)  # type: ignore[arg-type]
    syncer.sync_all(Snapshot([p], {}, []))
    written = [s for name, s in writer.of("status") if name == "worker"]
    return {c["type"]: c for c in (written[-1] if written else {}).get("conditions") or []}


def test_the_sets_labelled_for_the_pool_become_its_list_sorted_and_degraded_is_false() -> None:
    writer = Writer()
    writer.pinned_sets = [pis("zz", **{ROLE: "worker"}), pis("aa", **{ROLE: "worker"}),
                          pis("other", **{ROLE: "infra"}), pis("plain")]  # fmt: skip
    conditions = one_pass(writer, pool(pinnedImageSets=[{"name": "by-hand"}]))
    assert writer.of("pinnedImageSets") == [("worker", [{"name": "aa"}, {"name": "zz"}])]
    degraded = conditions["PinnedImageSetsDegraded"]
    assert degraded["status"] == "False" and "message" not in degraded and "reason" not in degraded


def test_a_pool_already_right_is_not_written_and_none_selected_removes_the_field() -> None:
    writer = Writer()
    writer.pinned_sets = [pis("aa", **{ROLE: "worker"})]
    one_pass(writer, pool(pinnedImageSets=[{"name": "aa"}]))
    assert writer.of("pinnedImageSets") == []
    writer.pinned_sets = [pis("aa", **{ROLE: "infra"})]  # relabelled: no longer the pool's
    conditions = one_pass(writer, pool(pinnedImageSets=[{"name": "aa"}]))
    assert writer.of("pinnedImageSets") == [("worker", None)], "null: the field is removed"
    assert conditions["PinnedImageSetsDegraded"]["status"] == "False"


def test_a_pool_selecting_everything_is_skipped_and_one_selecting_nothing_gets_no_set() -> None:
    writer = Writer()
    writer.pinned_sets = [pis("aa", **{ROLE: "worker"})]
    conditions = one_pass(writer, pool(machineConfigSelector={}, pinnedImageSets=[{"name": "x"}]))
    assert writer.of("pinnedImageSets") == [] and "PinnedImageSetsDegraded" not in conditions
    bare = pool(pinnedImageSets=[{"name": "aa"}])
    del bare["spec"]["machineConfigSelector"]
    one_pass(writer, bare)
    assert writer.of("pinnedImageSets") == [("worker", None)]


def test_a_failed_write_degrades_with_upstreams_text_and_the_pool_keeps_its_list() -> None:
    class Refusing(Writer):
        def set_pinned_image_sets(self, pool: str, refs: list[Obj] | None) -> Obj:
            raise ApiError(403, "Forbidden", 'machineconfigpools "worker" is forbidden: no')

    writer = Refusing()
    writer.pinned_sets = [pis("aa", **{ROLE: "worker"})]
    degraded = one_pass(writer, pool())["PinnedImageSetsDegraded"]
    assert degraded["status"] == "True" and "reason" not in degraded
    assert degraded["message"] == (
        'Failed to populate pinned image sets for pool worker: machineconfigpools "worker" '
        "is forbidden: no"
    )


def test_without_the_api_or_with_a_refused_listing_nothing_is_written_or_reported() -> None:
    writer = Writer()  # pinned_sets None: the cluster serves no PinnedImageSets
    assert "PinnedImageSetsDegraded" not in one_pass(writer, pool())

    class Failing(Writer):
        def pinned_image_sets(self) -> list[Obj] | None:
            raise ApiError(500, "InternalError", "etcd down")

    failing = Failing()
    assert "PinnedImageSetsDegraded" not in one_pass(failing, pool())
    assert failing.of("pinnedImageSets") == []


def test_the_sets_are_listed_at_most_every_fresh_seconds() -> None:
    listed = [0]
    now = [0.0]

    class Counting(Writer):
        def pinned_image_sets(self) -> list[Obj] | None:
            listed[0] += 1
            return []

    step = PoolPinnedSets(clock=lambda: now[0])
    writer = Counting()
    for t in (0.0, FRESH - 1, FRESH + 1):
        now[0] = t
        step(writer, pool(), lambda _o: None)
    assert listed[0] == 2


LABELS = st.dictionaries(st.sampled_from([ROLE, "team", "tier"]),
                         st.sampled_from(["worker", "infra", ""]), max_size=3)  # fmt: skip
SELECTORS = st.one_of(
    st.none(),
    st.builds(lambda m: {"matchLabels": m}, LABELS),
    st.builds(lambda k, v: {"matchExpressions": [{"key": k, "operator": "In", "values": v}]},
              st.sampled_from([ROLE, "team"]), st.lists(st.sampled_from(["worker", "infra"]))),
)  # fmt: skip


@given(SELECTORS, st.lists(st.tuples(st.sampled_from("abcdef"), LABELS), max_size=8))
def test_selected_sets_are_exactly_the_matching_names_sorted_once(
    selector: Obj | None, items: list[tuple[str, dict[str, str]]]
) -> None:
    sets = [pis(name, **labels) for name, labels in items]
    p = pool(machineConfigSelector=selector)
    chosen = selected_sets(p, sets)
    if selector == {}:
        assert chosen is None
        return
    assert chosen is not None
    assert chosen == sorted(set(chosen))
    wanted = {n for n, labels in items if selector_matches(selector, labels)}
    assert set(chosen) == wanted


def test_a_changed_selector_is_honoured_between_two_listings() -> None:
    writer = Writer()
    writer.pinned_sets = [pis("aa", **{ROLE: "worker"}), pis("bb", **{ROLE: "infra"})]
    writer.pools["worker"] = pool()
    step = PoolPinnedSets(clock=lambda: 0.0)  # one listing for the whole test
    written, verdict = step(writer, pool(), lambda _o: None)
    assert written["spec"]["pinnedImageSets"] == [{"name": "aa"}] and verdict == ""
    relabelled = pool(machineConfigSelector={"matchLabels": {ROLE: "infra"}})
    written, _ = step(writer, relabelled, lambda _o: None)
    assert written["spec"]["pinnedImageSets"] == [{"name": "bb"}]
