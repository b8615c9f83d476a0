"""Which pools a change touches (model/pool/touched), rule by rule, and what a node's move
between two configs costs (model/planning/plan.update_cost)."""

from __future__ import annotations

from typing import Any

import pytest

from mcd.model.planning.plan import Cost, config_named, update_cost
from mcd.model.pool.touched import EVERY, MANY, Changes, touched
from tests.builders import file_entry, mc_doc

WORKER = {"node-role.kubernetes.io/worker": ""}
INFRA = {"node-role.kubernetes.io/infra": ""}


def obj(name: str, labels: dict[str, str] | None = None, **meta: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": dict(labels or {}), **meta}}


def pool(name: str, nodes: object, configs: object = None, target: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"nodeSelector": nodes}
    if configs is not None:
        spec["machineConfigSelector"] = configs
    if target:
        spec["configuration"] = {"name": target}
    return {"metadata": {"name": name}, "spec": spec}


POOLS = [
    pool("worker", {"matchLabels": WORKER}, {"matchLabels": {"role": "worker"}}, "rendered-w-1"),
    pool("infra", {"matchLabels": INFRA}, {"matchLabels": {"role": "infra"}}, "rendered-i-1"),
]


def test_no_change_is_falsy_and_each_kind_of_change_is_not() -> None:
    assert not Changes()
    full = Changes()
    full.everything()
    assert full and touched(POOLS, full) is EVERY
    node = Changes()
    node.node(obj("n", WORKER), obj("n", WORKER))
    assert node and not node.full
    named = Changes()
    named.pool(pool("infra", {}), pool("infra", {}, target="rendered-infra-2"))
    assert named and named.pools == {"infra"}
    config = Changes()
    config.config(None, obj("50-x", {"role": "infra"}))
    assert config and config.config_names == {"50-x"}


def test_a_node_whose_labels_stay_touches_the_pools_selecting_it() -> None:
    changes = Changes()
    changes.node(obj("n1", INFRA), obj("n1", INFRA))
    assert changes.node_labels == [INFRA]
    assert touched(POOLS, changes) == frozenset({"infra"})


@pytest.mark.parametrize(
    ("old", "new"),
    [(None, obj("n", WORKER)), (obj("n", WORKER), None), (obj("n", WORKER), obj("n", INFRA))],
)
def test_a_node_added_deleted_or_relabelled_is_a_full_pass(
    old: dict[str, Any] | None, new: dict[str, Any] | None
) -> None:
    changes = Changes()
    changes.node(old, new)
    assert changes.full and touched(POOLS, changes) is EVERY


def test_past_many_node_changes_the_next_pass_is_full_and_the_list_stays_bounded() -> None:
    changes = Changes()
    for i in range(MANY):
        changes.node(obj(f"n{i}", WORKER), obj(f"n{i}", WORKER))
    assert not changes.full and len(changes.node_labels) == MANY
    changes.node(obj("last", WORKER), obj("last", WORKER))
    assert changes.full and len(changes.node_labels) == MANY
    changes.node(obj("more", WORKER), obj("more", WORKER))
    assert len(changes.node_labels) == MANY


def test_a_pool_changed_in_place_touches_itself_and_a_new_selector_everything() -> None:
    same = Changes()
    same.pool(POOLS[1], {**POOLS[1], "spec": {**POOLS[1]["spec"], "paused": True}})
    assert touched(POOLS, same) == frozenset({"infra"})
    status = Changes()  # the controller's own output: no input to a pass
    status.pool(POOLS[1], {**POOLS[1], "status": {"machineCount": 3}})
    assert touched(POOLS, status) == frozenset()
    for old, new in [
        (None, POOLS[1]),
        (POOLS[1], None),
        (POOLS[0], POOLS[1]),
        (POOLS[1], pool("infra", {"matchLabels": WORKER})),
    ]:
        changes = Changes()
        changes.pool(old, new)
        assert changes.full, (old, new)


def test_a_machineconfig_touches_the_pools_selecting_it_before_or_after() -> None:
    changes = Changes()
    changes.config(obj("50-a", {"role": "infra"}), obj("50-a", {"role": "other"}))
    assert not changes.full
    assert changes.config_labels == [{"role": "infra"}, {"role": "other"}]
    assert touched(POOLS, changes) == frozenset({"infra"})
    unselected = Changes()
    unselected.config(None, obj("50-b", {"role": "nobody"}))
    assert touched(POOLS, unselected) == frozenset()


def test_a_rendered_or_owned_config_or_one_a_pool_names_is_a_full_pass() -> None:
    rendered = Changes()
    rendered.config(None, obj("rendered-w-2"))
    assert rendered.full
    owned = Changes()
    owned.config(obj("99-x", ownerReferences=[{"kind": "MachineConfigPool"}]), None)
    assert owned.full
    named = Changes()
    named.config(None, obj("rendered-i-1"))
    named.full = False  # only the name is left to tell: the pool names it as its target
    assert touched(POOLS, named) is EVERY
    in_status = Changes()
    in_status.config_names.add("mc-in-status")
    with_status = [{**POOLS[0], "status": {"configuration": {"name": "mc-in-status"}}}]
    assert touched(with_status, in_status) is EVERY


def test_a_selector_that_cannot_be_read_is_a_full_pass_for_configs() -> None:
    changes = Changes()
    changes.config(None, obj("50-a", {"role": "infra"}))
    assert touched([pool("odd", {}, ["not", "a", "selector"])], changes) is EVERY
    bad_op = pool("bad", {}, {"matchExpressions": [{"key": "a", "operator": "Near"}]})
    assert touched([bad_op], changes) is EVERY


def test_a_pool_with_an_unreadable_node_selector_is_not_touched_by_node_changes() -> None:
    changes = Changes()
    changes.node(obj("n", INFRA), obj("n", INFRA))
    odd = pool("odd", {"matchExpressions": [{"key": "a", "operator": "Near"}]})
    assert touched([odd], changes) == frozenset()


def _doc(name: str, **kwargs: Any) -> dict[str, Any]:
    return mc_doc(name, files=[file_entry("/etc/app.conf", kwargs.pop("app", "a\n"), 0o644)],
                  **kwargs)  # fmt: skip


def test_the_cost_of_a_move_between_two_configs() -> None:
    configs = {
        "rendered-1": _doc("rendered-1"),
        "rendered-2": _doc("rendered-2", app="b\n"),
        "rendered-3": _doc("rendered-3", kernelArguments=["nosmt"]),
        "broken": {"metadata": {"name": "broken"}, "spec": {"config": "not ignition"}},
    }
    assert update_cost(configs, "rendered-1", "rendered-1") == Cost.NONE
    assert update_cost(configs, "rendered-1", "rendered-2") == Cost.REBOOT
    assert update_cost(configs, "rendered-1", "rendered-3") == Cost.REBOOT
    assert update_cost(configs, "rendered-1", "missing") is None
    assert update_cost(configs, "missing", "rendered-1") is None
    assert update_cost(configs, "rendered-1", "broken") is None


def test_a_named_config_is_parsed_or_none() -> None:
    configs = {"rendered-1": _doc("rendered-1"), "bad": {"spec": {"config": 5}}}
    found = config_named(configs, "rendered-1")
    assert found is not None and found.name == "rendered-1"
    assert config_named(configs, "bad") is None
    assert config_named(configs, "absent") is None
    assert config_named({"": _doc("rendered-1")}, "") is None


def test_only_node_changes_that_move_no_node_are_nodes_only() -> None:
    """What lets the controller's pass only refill slots and reuse the last membership."""
    quiet = Changes()
    assert not quiet.nodes_only, "nothing changed: nothing to refill"
    done = Changes()
    done.node(obj("n1", WORKER, annotations={"state": "Working"}),
              obj("n1", WORKER, annotations={"state": "Done"}))  # fmt: skip
    assert done.nodes_only
    relabelled, added, removed = Changes(), Changes(), Changes()
    relabelled.node(obj("n1", WORKER), obj("n1", INFRA))
    added.node(None, obj("n2", WORKER))
    removed.node(obj("n2", WORKER), None)
    assert not any(c.nodes_only for c in (relabelled, added, removed))
    for other in ("pool", "config", "named", "everything"):
        mixed = Changes()
        mixed.node(obj("n1", WORKER), obj("n1", WORKER))
        if other == "pool":
            mixed.pool(POOLS[0], {**POOLS[0], "spec": {**POOLS[0]["spec"], "paused": True}})
        elif other == "config":
            mixed.config(None, obj("50-x", {"role": "worker"}))
        elif other == "named":
            mixed.pools.add("worker")
        else:
            mixed.everything()
        assert not mixed.nodes_only, other
