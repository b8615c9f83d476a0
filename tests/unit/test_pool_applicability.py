"""The pool condition NodesCannotApply (issue 34): nodes whose host cannot apply the pool's
target, named with their OS and the fields, before the rollout reaches them."""

from __future__ import annotations

from typing import Any

from mcd.controller.conditions.applicability import update_condition
from mcd.controller.preview import describe_preview, preview_pool
from mcd.model.planning.applicability import (
    COREOS,
    GRUB,
    HOST_SUPPORT_ANNOTATION,
    HostSupport,
)
from mcd.model.vocabulary import Annotation
from tests.builders import mc_doc

DEBIAN = HostSupport("Debian GNU/Linux 12 (bookworm)", "", GRUB, 252)
WORKER = {"node-role.kubernetes.io/worker": ""}


def _pool(target: str) -> dict[str, Any]:
    return {
        "metadata": {"name": "worker"},
        "spec": {"nodeSelector": {"matchLabels": WORKER}, "configuration": {"name": target}},
    }


def _node(name: str, current: str, support: HostSupport | None) -> dict[str, Any]:
    annotations: dict[str, str] = {Annotation.CURRENT_CONFIG: current}
    if support is not None:
        annotations[HOST_SUPPORT_ANNOTATION] = support.annotation()
    return {"metadata": {"name": name, "labels": WORKER, "annotations": annotations}}


def _condition(conditions: list[dict[str, Any]]) -> dict[str, Any] | None:
    return next((c for c in conditions if c["type"] == "NodesCannotApply"), None)


CONFIGS = {
    "rendered-worker-1": mc_doc("rendered-worker-1"),
    "rendered-worker-2": mc_doc(
        "rendered-worker-2", kernelType="realtime", kernelArguments=["nosmt"]
    ),
    "rendered-worker-3": mc_doc("rendered-worker-3", kernelArguments=["nosmt"]),
}


def test_the_pool_names_each_node_that_cannot_take_its_target_and_clears_when_none() -> None:
    nodes = [
        _node("debian-1", "rendered-worker-1", DEBIAN),
        _node("rhcos-1", "rendered-worker-1", COREOS),
        _node("quiet-1", "rendered-worker-1", None),  # published nothing: assumed able
    ]
    conditions: list[dict[str, Any]] = []
    pool = _pool("rendered-worker-2")
    update_condition(pool, nodes, CONFIGS, conditions, "2026-11-26T10:00:00Z")
    c = _condition(conditions)
    assert c is not None and c["status"] == "True" and c["reason"] == "FieldsNotApplicable"
    assert c["message"] == (
        "1 node(s) cannot apply rendered-worker-2: debian-1 (Debian GNU/Linux 12 (bookworm)): "
        'spec.kernelType "realtime" needs rpm-ostree; the node has none'
    )
    # the kernel arguments alone: GRUB takes them, the condition turns False
    pool = _pool("rendered-worker-3")
    update_condition(pool, nodes, CONFIGS, conditions, "2026-11-26T10:05:00Z")
    c = _condition(conditions)
    assert c is not None and c["status"] == "False" and c["reason"] == "AllNodesCanApply"


def test_no_condition_while_every_node_can_apply() -> None:
    nodes = [_node("debian-1", "rendered-worker-1", DEBIAN)]
    conditions: list[dict[str, Any]] = []
    pool = _pool("rendered-worker-3")
    update_condition(pool, nodes, CONFIGS, conditions, "2026-11-26T10:00:00Z")
    assert conditions == []


def test_mcd_plan_pool_shows_the_node_that_cannot_take_the_pools_next_config() -> None:
    pool = _pool("rendered-worker-1")
    pool["spec"]["machineConfigSelector"] = {"matchLabels": {"pool": "worker"}}
    source = mc_doc("50-worker-rt", kernelType="realtime")
    source["metadata"]["labels"] = {"pool": "worker"}
    configs = {**CONFIGS, "50-worker-rt": source}
    nodes = [
        _node("debian-1", "rendered-worker-1", DEBIAN),
        _node("rhcos-1", "rendered-worker-1", COREOS),
    ]
    preview = preview_pool(pool, [pool], configs, nodes)
    rows = {r.name: r for r in preview.nodes}
    assert rows["debian-1"].action == "unreconcilable"
    assert (
        f"cannot apply {preview.target} on this node (Debian GNU/Linux 12 (bookworm)): "
        'spec.kernelType "realtime" needs rpm-ostree' in rows["debian-1"].reason
    )
    assert rows["rhcos-1"].action == "update" and rows["rhcos-1"].reboot
    assert "debian-1: can't reconcile config" in describe_preview(preview)
