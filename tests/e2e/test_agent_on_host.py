"""Agents outside pods (issue 40, 9): a second ``mcd start`` on a host whose agent already
listens on the address ends at once, in one line naming the address and the agent that holds
the host (exit 1); the first agent goes on undisturbed."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.e2e.conftest import NodeFactory
from tests.e2e.harness import free_port
from tests.e2e.scenarios import boot_on
from tests.fakes.kubecluster import TestCluster


def test_a_second_agent_on_the_port_fails_naming_the_address_and_the_agent(
    make_node: NodeFactory, kube_cluster: TestCluster, tmp_path: Path
) -> None:
    port = free_port()
    node = make_node(extra_args=("--metrics-url", f"127.0.0.1:{port}"))
    name = boot_on(node, kube_cluster)
    out, err = tmp_path / "second.out", tmp_path / "second.err"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        second = subprocess.Popen(node.command(), stdout=stdout, stderr=stderr, env=node.env())
    try:
        assert second.wait(60) == 1
    finally:
        if second.poll() is None:
            second.kill()
            second.wait(10)
    lines = err.read_text().splitlines()
    assert "Traceback" not in err.read_text()
    assert re.fullmatch(
        rf"error: cannot listen on 127\.0\.0\.1:{port} for /metrics, /healthz and /readyz: "
        r"address already in use: another agent runs on this host and holds "
        r"/run/machine-config-daemon-agent\.lock \(pid \d+ \(mcd start --node-name "
        rf"{node.name}\) since [0-9TZ:-]+\); stop it, or give --metrics-url a free address",
        lines[-1],
    ), lines[-1]
    assert "Starting to manage node" not in err.read_text()
    assert node.running and node.probe("/healthz")[0] == 200
    node.wait_state("Done", name)
