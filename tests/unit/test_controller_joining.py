"""A node booted into a custom pool (upstream ``isCustomPoolBootedNode``) and the labels
its pool's nodeSelector gives it (upstream ``applyCustomPoolLabels``): pure parts."""

from __future__ import annotations

from typing import Any

import pytest

from mcd.controller.joining.labels import APPLIED, FIRST_PIVOT, booted_pool, pool_labels

Obj = dict[str, Any]


def _config(owner: str | None) -> Obj:
    owners = [{"kind": "MachineConfigPool", "name": owner}] if owner else []
    return {"metadata": {"name": "rendered-x-1", "ownerReferences": owners}}


def _node(**annotations: str) -> Obj:
    return {"metadata": {"name": "n", "annotations": annotations}}


@pytest.mark.parametrize(
    ("owner", "annotations", "expected"),
    [
        ("infra", {FIRST_PIVOT: "rendered-x-1"}, "infra"),
        ("worker", {FIRST_PIVOT: "rendered-x-1"}, ""),
        ("master", {FIRST_PIVOT: "rendered-x-1"}, ""),
        (None, {FIRST_PIVOT: "rendered-x-1"}, ""),
        ("infra", {FIRST_PIVOT: "rendered-x-1", APPLIED: ""}, ""),
        ("infra", {}, ""),
        ("infra", {FIRST_PIVOT: "rendered-gone-1"}, ""),
    ],
)
def test_booted_pool(owner: str | None, annotations: dict[str, str], expected: str) -> None:
    configs = {"rendered-x-1": _config(owner)}
    assert booted_pool(_node(**annotations), configs.get) == expected


def test_pool_labels_follow_upstreams_derivation() -> None:
    selector = {
        "matchLabels": {"node-role.kubernetes.io/infra": "", "zone": "a"},
        "matchExpressions": [
            {"key": "zone", "operator": "In", "values": ["b"]},  # matchLabels wins
            {"key": "tier", "operator": "In", "values": ["gold"]},
            {"key": "rack", "operator": "In", "values": ["1", "2"]},  # ambiguous: skipped
            {"key": "gpu", "operator": "Exists"},
            {"key": "old", "operator": "DoesNotExist"},
        ],
    }
    assert pool_labels({"metadata": {"name": "infra"}, "spec": {"nodeSelector": selector}}) == {
        "node-role.kubernetes.io/infra": "",
        "zone": "a",
        "tier": "gold",
        "gpu": "",
    }
    assert pool_labels({"metadata": {"name": "p"}, "spec": {}}) == {}
