"""Prune is fail safe (issue 41, item 7): a pool whose rollout history or rollback pin
cannot be read (over 16 KiB, or malformed after a hand edit) may name a rendered config kept
for a rollback, so none of that pool's rendered configs is pruned, by ``mcd prune`` or by the
controller, and the render leaves such a history as it is (it never releases)."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from mcd.controller.history import AutoPrune, guarded_pools
from mcd.model.pool.history import (
    HISTORY_ANNOTATION,
    MAX_TEXT,
    ROLLBACK_ANNOTATION,
    belongs,
    history_problem,
    unreadable,
)
from mcd.model.pool.render import GENERATED_BY

NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
DAY = timedelta(days=1)
Obj = dict[str, Any]


def rendered(name: str, owner: str = "") -> Obj:
    meta: Obj = {"name": name, "uid": f"uid-{name}", "resourceVersion": "7",
                 "creationTimestamp": (NOW - 2 * DAY).strftime("%Y-%m-%dT%H:%M:%SZ"),
                 "annotations": {GENERATED_BY: "v"}}  # fmt: skip
    if owner:
        meta["ownerReferences"] = [{"kind": "MachineConfigPool", "name": owner, "uid": "u"}]
    return {"metadata": meta}


def pool(name: str, annotations: dict[str, str]) -> Obj:
    return {"metadata": {"name": name, "annotations": annotations},
            "spec": {"configuration": {"name": f"rendered-{name}-now"}}}  # fmt: skip


def entry(n: int, config: str, change: str = "") -> Obj:
    return {"revision": n, "config": config, "time": "t", "by": "b", "change": change}


BIG = json.dumps([entry(i, f"rendered-worker-{i}", "x" * 2000) for i in range(9)])
UNREADABLE = {
    "over 16 KiB": ({HISTORY_ANNOTATION: BIG}, f"is over {MAX_TEXT} characters"),
    "not JSON": ({HISTORY_ANNOTATION: '[{"revision": 1, "config": "rendered-worker-kept"'},
                 "is not valid JSON"),
    "not a list": ({HISTORY_ANNOTATION: '{"revision": 1}'}, "is not a list of revisions"),
    "an entry broken": ({HISTORY_ANNOTATION: json.dumps([entry(1, "rendered-worker-a"),
                                                         {"revision": "2", "config": 3}])},
                        "has an entry without a revision number and config"),
    "pin broken": ({ROLLBACK_ANNOTATION: '{"config": ""}'}, "names no config"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(UNREADABLE))
def test_an_unreadable_history_or_pin_says_why(case: str) -> None:
    annotations, why = UNREADABLE[case]
    assert len(BIG) > MAX_TEXT
    assert why in unreadable(pool("worker", annotations))
    assert next(iter(annotations)) in unreadable(pool("worker", annotations))


def test_a_readable_or_absent_history_protects_nothing_more() -> None:
    fine = json.dumps([entry(1, "rendered-worker-a"), entry(2, "rendered-worker-b")])
    assert unreadable(pool("worker", {HISTORY_ANNOTATION: fine})) == ""
    assert unreadable(pool("worker", {})) == ""
    assert history_problem(None) == "" and history_problem("") == ""
    pin = json.dumps({"config": "rendered-worker-a", "rendered": "rendered-worker-b"})
    assert unreadable(pool("worker", {ROLLBACK_ANNOTATION: pin})) == ""


def test_a_config_belongs_to_its_owner_pool_or_by_its_name() -> None:
    assert belongs(rendered("rendered-x-1", owner="worker"), "worker")
    assert belongs(rendered("rendered-worker-1"), "worker")
    assert belongs(rendered("rendered-worker-gpu-1"), "worker")  # kept: only more is kept
    assert not belongs(rendered("rendered-infra-1"), "worker")


class FakeKube:
    def __init__(self) -> None:
        self.deleted: list[str] = []

    def request(self, method: str, path: str, body: Any = None, **_: Any) -> Obj:
        assert method == "DELETE"
        self.deleted.append(path.rsplit("/", 1)[1])
        return {}


@pytest.mark.parametrize("case", sorted(UNREADABLE))
def test_the_controller_prunes_none_of_a_pool_whose_history_cannot_be_read(
    case: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Only the unreadable history names rendered-worker-kept: it stays, and so does every
    other rendered config of that pool; another pool's orphan still goes."""
    annotations, why = UNREADABLE[case]
    configs = [rendered("rendered-worker-kept"), rendered("rendered-worker-orphan"),
               rendered("rendered-other-name", owner="worker"),
               rendered("rendered-infra-orphan")]  # fmt: skip
    pools = [pool("worker", annotations), pool("infra", {})]
    kube = FakeKube()
    with caplog.at_level(logging.WARNING):
        gone = AutoPrune(kube, DAY).run(lambda: configs, lambda: pools, list, NOW, 0)  # type: ignore[arg-type]
    assert gone == ["rendered-infra-orphan"] and kube.deleted == gone
    lines = [r.getMessage() for r in caplog.records if "pool worker" in r.getMessage()]
    assert len(lines) == 1 and why in lines[0]
    assert "none of pool worker's rendered configs is pruned" in lines[0]
    assert guarded_pools(pools) == {"worker": unreadable(pools[0])}
