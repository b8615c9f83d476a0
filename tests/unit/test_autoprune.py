"""The controller's prune of unused rendered configs (:class:`mcd.controller.history.AutoPrune`
over :func:`mcd.model.pool.history.prunable`): never a config in use, never one inside the
grace period, re-judged just before each delete, bounded per prune, not every pass."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from mcd.cluster.api import ApiError
from mcd.controller.history import NODE_KEYS, AutoPrune
from mcd.model.pool.history import HISTORY_ANNOTATION, encode_history, in_use, prunable, record
from mcd.model.pool.render import GENERATED_BY

NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
DAY = timedelta(days=1)
MCS = "/apis/machineconfiguration.openshift.io/v1/machineconfigs"
Obj = dict[str, Any]


def rendered(name: str, age: timedelta, marked: bool = True) -> Obj:
    created = (NOW - age).strftime("%Y-%m-%dT%H:%M:%SZ")
    notes = {GENERATED_BY: "v"} if marked else {}
    return {"metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": "7",
                         "creationTimestamp": created, "annotations": notes}}  # fmt: skip


def pool_using(target: str = "", history: tuple[str, ...] = ()) -> Obj:
    revs: list[Any] = []
    for config in history:
        revs = record(revs, config, "t", "b", "c")
    return {"metadata": {"annotations": {HISTORY_ANNOTATION: encode_history(revs)}},
            "spec": {"configuration": {"name": target}}}  # fmt: skip


def node_on(current: str, desired: str) -> Obj:
    return {"metadata": {"annotations": {NODE_KEYS[0]: current, NODE_KEYS[1]: desired}}}


NAMES = st.sampled_from([f"rendered-worker-{i}" for i in range(8)] + ["00-worker", "99-x"])


@given(
    configs=st.lists(st.tuples(NAMES, st.integers(0, 3 * 24 * 60), st.booleans()), max_size=10),
    targets=st.lists(NAMES, max_size=3),
    histories=st.lists(NAMES, max_size=4),
    nodes=st.lists(st.tuples(NAMES, NAMES), max_size=4),
    grace_minutes=st.integers(0, 2 * 24 * 60),
)
def test_prunable_never_names_a_config_in_use_or_inside_the_grace(
    configs: list[tuple[str, int, bool]], targets: list[str], histories: list[str],
    nodes: list[tuple[str, str]], grace_minutes: int,
) -> None:  # fmt: skip
    docs = [rendered(n, timedelta(minutes=age), marked) for n, age, marked in configs]
    pools = [pool_using(t, tuple(histories)) for t in targets]
    used = in_use(pools, [node_on(c, d) for c, d in nodes], NODE_KEYS)
    grace = timedelta(minutes=grace_minutes)
    gone = prunable(docs, used, NOW, grace, GENERATED_BY)
    for name in gone:
        assert name not in used and name in {n for n, _, _ in configs}
        assert name.startswith("rendered-")
        assert name not in targets
        assert not (pools and name in histories)  # a revision is in use on the pools it names
        assert all(name not in pair for pair in nodes)
        assert any(n == name and marked and timedelta(minutes=age) >= grace
                   for n, age, marked in configs)  # fmt: skip


class FakeKube:
    """Records DELETEs; answers 409 when told a config changed (its precondition fails)."""

    def __init__(self, changed: set[str] | None = None) -> None:
        self.deleted: list[tuple[str, Any]] = []
        self.changed = changed or set()

    def request(self, method: str, path: str, body: Any = None, **_: Any) -> Obj:
        assert method == "DELETE"
        name = path.rsplit("/", 1)[1]
        if name in self.changed:
            raise ApiError(409, "Conflict", "Precondition failed: uid")
        self.deleted.append((path, body))
        return {}


def test_an_orphan_past_the_grace_goes_with_its_uid_and_version_as_preconditions() -> None:
    kube = FakeKube()
    configs = [rendered("rendered-w-old", 2 * DAY), rendered("rendered-w-young", DAY / 2),
               rendered("rendered-w-used", 2 * DAY), rendered("00-worker", 9 * DAY, False)]  # fmt: skip
    pruner = AutoPrune(kube, DAY, every=300)  # type: ignore[arg-type]
    gone = pruner.run(lambda: configs, lambda: [pool_using("rendered-w-used")], list, NOW, 0)
    assert gone == ["rendered-w-old"]
    assert kube.deleted == [(f"{MCS}/rendered-w-old", {
        "apiVersion": "v1", "kind": "DeleteOptions",
        "preconditions": {"uid": "uid-rendered-w-old", "resourceVersion": "7"}})]  # fmt: skip


def test_a_config_taken_into_use_after_it_was_judged_is_kept() -> None:
    """The pools cache changes between the first judgement and the delete (the pass wrote a
    target, a node's desiredConfig arrived): the second look keeps it."""
    kube = FakeKube()
    configs = [rendered("rendered-w-a", 2 * DAY), rendered("rendered-w-b", 2 * DAY)]
    looks: list[int] = []

    def pools() -> list[Obj]:
        looks.append(1)
        return [] if len(looks) == 1 else [pool_using("rendered-w-a")]

    def nodes() -> list[Obj]:
        return [] if len(looks) == 1 else [node_on("x", "rendered-w-b")]

    gone = AutoPrune(kube, DAY).run(lambda: configs, pools, nodes, NOW, 0)  # type: ignore[arg-type]
    assert gone == [] and kube.deleted == []


def test_a_config_changed_or_gone_since_is_left_alone() -> None:
    kube = FakeKube(changed={"rendered-w-a"})
    configs = [rendered("rendered-w-a", 2 * DAY), rendered("rendered-w-b", 2 * DAY)]
    calls: list[int] = []

    def current() -> list[Obj]:
        calls.append(1)
        return configs if len(calls) == 1 else configs[:1]  # b deleted by someone meanwhile

    gone = AutoPrune(kube, DAY).run(current, list, list, NOW, 0)  # type: ignore[arg-type]
    assert gone == [] and kube.deleted == []


def test_a_prune_deletes_at_most_a_batch_and_runs_every_interval_not_every_pass() -> None:
    kube = FakeKube()
    configs = [rendered(f"rendered-w-{i:02}", 2 * DAY) for i in range(30)]
    pruner = AutoPrune(kube, DAY, every=300, batch=20)  # type: ignore[arg-type]
    assert not pruner.due(1000.0)  # a new leader waits one interval first
    assert not pruner.due(1299.0)
    assert pruner.due(1300.0)
    assert len(pruner.run(lambda: configs, list, list, NOW, 1300.0)) == 20
    assert not pruner.due(1301.0) and pruner.due(1600.0)
    assert not AutoPrune(kube, timedelta(0)).due(1e9)  # type: ignore[arg-type]


def test_a_bad_prune_grace_is_refused_before_the_controller_starts(tmp_path: Any) -> None:
    from click.testing import CliRunner  # noqa: PLC0415

    from mcd.cli import cli  # noqa: PLC0415

    missing = str(tmp_path / "kubeconfig")
    for value, said in (("soon", "expected a duration such as 90m, 4h or 1h30m, got 'soon'"),
                        ("8d", "must be more than 0 and at most 7 days")):  # fmt: skip
        done = CliRunner().invoke(cli, ["controller", "--prune-grace", value,
                                        "--kubeconfig", missing])  # fmt: skip
        assert done.exit_code == 64  # a bad flag value: usage, as in every command
        assert f"Invalid value for '--prune-grace': {said}" in done.output
