"""Fixtures for the e2e tests: nodes with a running agent, on the fake or a real cluster."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import AgentNode
from tests.fakes.kubecluster import TestCluster

NodeFactory = Callable[..., AgentNode]


@pytest.fixture
def make_node(kube_cluster: TestCluster, tmp_path: Path) -> Iterator[NodeFactory]:
    nodes: list[AgentNode] = []

    def make(base: str = "node", **kwargs: Any) -> AgentNode:
        node = AgentNode(kube_cluster, tmp_path / f"{base}-{len(nodes)}", base, **kwargs)
        nodes.append(node)
        return node

    try:
        yield make
    finally:
        for node in nodes:
            node.close()
