"""A node booted into a custom pool (upstream ``isCustomPoolBootedNode``) and the labels
its pool's nodeSelector gives it (upstream ``applyCustomPoolLabels``): pure parts."""

from __future__ import annotations

from typing import Any

import pytest

from mcd.controller.joining.labels import (
    APPLIED,
    FIRST_PIVOT,
    CustomPoolLabels,
    booted_pool,
    custom_owner,
    pool_labels,
)

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
    owner_of = lambda n: custom_owner(configs[n]) if n in configs else ""  # noqa: E731
    assert booted_pool(_node(**annotations), owner_of) == expected


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


class _Kube:
    def __init__(self) -> None:
        self.requests: list[tuple[str, str, Obj]] = []

    def request(self, method: str, path: str, body: Obj, content_type: str) -> Obj:
        self.requests.append((method, path, body))
        return {"metadata": {"name": path.rsplit("/", 1)[1], **body["metadata"]}}


class _Writer:
    def __init__(self) -> None:
        self.kube = _Kube()
        self.writes = 0


def test_the_labeller_writes_a_custom_booted_node_once_and_leaves_the_rest() -> None:
    writer = _Writer()
    seen: list[Obj] = []
    labeller = CustomPoolLabels(writer, seen.append)  # type: ignore[arg-type]
    role = "node-role.kubernetes.io/infra"
    pools: list[Obj] = [{"metadata": {"name": "infra"}, "spec": {"nodeSelector": {"matchLabels": {role: ""}}}},
             {"metadata": {"name": "bare"}, "spec": {"nodeSelector": {}}}]  # fmt: skip
    configs = {"rendered-infra-1": _config("infra"), "rendered-bare-1": _config("bare"),
               "rendered-worker-1": _config("worker")}  # fmt: skip
    nodes: list[Obj] = [
        {"metadata": {"name": "joined", "annotations": {FIRST_PIVOT: "rendered-infra-1"}}},
        {"metadata": {"name": "labelled", "labels": {role: ""},
                      "annotations": {FIRST_PIVOT: "rendered-infra-1"}}},
        {"metadata": {"name": "bare", "annotations": {FIRST_PIVOT: "rendered-bare-1"}}},
        {"metadata": {"name": "worker", "annotations": {FIRST_PIVOT: "rendered-worker-1"}}},
        {"metadata": {"name": "old"}},
    ]  # fmt: skip
    assert labeller(nodes, pools, configs.get) == ["joined"]
    assert writer.kube.requests == [("PATCH", "/api/v1/nodes/joined", {"metadata": {
        "labels": {role: ""}, "annotations": {APPLIED: ""}}})]  # fmt: skip
    assert writer.writes == 1 and [n["metadata"]["name"] for n in seen] == ["joined"]
