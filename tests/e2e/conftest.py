"""Fixtures for the e2e tests: nodes with a running agent, on the fake or a real cluster.

Each node's systemd is a real one (PID 1 of an nspawn container, :mod:`tests.real`) where the
machine can run it, else the D-Bus test service; ``make_node(fake_systemd=True)`` asks for the
test service (a test that injects systemd faults or reads the calls it received).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import AgentNode
from tests.fakes.kubecluster import TestCluster
from tests.real.agent_node import RealSystemdNode
from tests.real.systemd_container import unavailable

NodeFactory = Callable[..., AgentNode]


@pytest.fixture
def make_node(kube_cluster: TestCluster, tmp_path: Path) -> Iterator[NodeFactory]:
    nodes: list[AgentNode] = []

    def make(base: str = "node", fake_systemd: bool = False, **kwargs: Any) -> AgentNode:
        kind = AgentNode if fake_systemd or unavailable() else RealSystemdNode
        node = kind(kube_cluster, tmp_path / f"{base}-{len(nodes)}", base, **kwargs)
        nodes.append(node)
        return node

    try:
        yield make
    finally:
        for node in nodes:
            node.close()
