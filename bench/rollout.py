"""A paced rollout: ``mcd controller`` over N ``mcd start`` agents (50 by default) with
``maxUnavailable: 10``. ``python -m bench.rollout`` (``make rollout``).

The agents run on plain host roots as in :mod:`bench.scale`. The pool starts paused; a new
MachineConfig (core's SSH keys: no drain, no reboot) renders; one probe node outside the
pool is moved to the new rendered config alone, which gives one node's update time T. Then
the pool is unpaused and the wall time until its status says ``Updated`` on the new config
is the figure; the ideal is ``ceil(N / maxUnavailable) * T`` (every batch as fast as one
node alone, no time lost between batches). On a machine with fewer cores than
``maxUnavailable`` a batch of agents cannot run as fast as one alone, so the target is
against ``ceil(N / maxUnavailable) * max(T, maxUnavailable * T / cores)``. Controller
requests per node update are counted by the server.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import Row, print_table
from bench.scale import ScaleNode, wait_until
from mcd.cluster.configs import MACHINECONFIGS
from mcd.cluster.pools import POOLS
from mcd.model.pool.render import ROLE_LABEL
from mcd.model.vocabulary import Annotation
from tests.e2e.configs import KEY_B, worker
from tests.e2e.harness import REPO, free_port
from tests.fakes.kubecluster import TestCluster

AGENTS = int(os.environ.get("MCD_ROLLOUT_AGENTS", "50"))
MAX_UNAVAILABLE = int(os.environ.get("MCD_ROLLOUT_MAX_UNAVAILABLE", "10"))
NODE_ROLE = "node-role.kubernetes.io/worker"


def _pool(cluster: TestCluster) -> dict[str, Any]:
    return cluster.kube.request("GET", f"{POOLS}/worker")


def _target(cluster: TestCluster) -> str:
    return str(((_pool(cluster).get("spec") or {}).get("configuration") or {}).get("name") or "")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        cluster = TestCluster(work)
        fake = cluster.fake
        assert fake is not None, "the rollout bench runs against the fake API server"
        base = worker("00-worker")
        base["metadata"]["labels"] = {ROLE_LABEL: "worker"}
        cluster.create(MACHINECONFIGS, base)
        cluster.create(
            POOLS,
            {
                "apiVersion": "machineconfiguration.openshift.io/v1",
                "kind": "MachineConfigPool",
                "metadata": {"name": "worker"},
                "spec": {
                    "machineConfigSelector": {"matchLabels": {ROLE_LABEL: "worker"}},
                    "nodeSelector": {"matchLabels": {NODE_ROLE: ""}},
                    "maxUnavailable": MAX_UNAVAILABLE,
                    "paused": True,
                },
            },
        )
        ns = cluster.namespace("rollout")
        ctl = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "mcd",
                "controller",
                "--kubeconfig",
                str(cluster.kubeconfig),
                "--metrics-url",
                f"127.0.0.1:{free_port()}",
                "--namespace",
                ns,
                "--lease-duration",
                "15",
                "--resync",
                "5",
            ],
            stdout=(work / "controller.log").open("wb"),
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
        nodes: list[ScaleNode] = []
        try:
            wait_until(lambda: _target(cluster) != "", 60, "first render")
            first = cluster.kube.request("GET", f"{MACHINECONFIGS}/{_target(cluster)}")
            started = time.monotonic()
            for i in range(AGENTS + 1):
                nodes.append(ScaleNode(cluster, work, i, first))
            probe, members = nodes[0], nodes[1:]
            for n in members:
                cluster.kube.request(
                    "PATCH",
                    f"/api/v1/nodes/{n.name}",
                    body={"metadata": {"labels": {NODE_ROLE: ""}}},
                    content_type="application/merge-patch+json",
                )
            wait_until(lambda: all(n.ready() for n in nodes), 600, f"{AGENTS + 1} agents ready")
            boot = time.monotonic() - started

            keys = worker("50-key", key=KEY_B)
            change = {
                "apiVersion": keys["apiVersion"],
                "kind": "MachineConfig",
                "metadata": {"name": "50-worker-key", "labels": {ROLE_LABEL: "worker"}},
                "spec": {
                    "config": {
                        "ignition": {"version": "3.4.0"},
                        "passwd": keys["spec"]["config"]["passwd"],
                    }
                },
            }
            cluster.create(MACHINECONFIGS, change)
            wait_until(
                lambda: _target(cluster) not in ("", first["metadata"]["name"]), 60, "second render"
            )
            second = _target(cluster)

            def done(node: ScaleNode) -> bool:
                a = cluster.get_node(node.name)["metadata"].get("annotations") or {}
                return (a.get(Annotation.CURRENT_CONFIG), a.get(Annotation.STATE)) == (
                    second,
                    "Done",
                )

            t0 = time.monotonic()
            cluster.annotate(probe.name, {Annotation.DESIRED_CONFIG: second})
            while not done(probe):
                if time.monotonic() - t0 > 120:
                    raise TimeoutError("probe node not updated in 120 s")
                time.sleep(0.01)
            one = time.monotonic() - t0

            mark = len(fake.requests)
            t1 = time.monotonic()
            cluster.kube.request(
                "PATCH",
                f"{POOLS}/worker",
                body={"spec": {"paused": False}},
                content_type="application/merge-patch+json",
            )

            def updated() -> bool:
                status = _pool(cluster).get("status") or {}
                return (status.get("configuration") or {}).get("name") == second and any(
                    c.get("type") == "Updated" and c.get("status") == "True"
                    for c in status.get("conditions") or []
                )

            wait_until(updated, 900, "pool Updated")
            wall = time.monotonic() - t1
            assert all(done(n) for n in members)
            mine = [
                r
                for r in fake.requests[mark:]
                if r.user_agent.startswith("machine-config-controller")
                and not r.watch
                and "/leases" not in r.path
            ]
        finally:
            ctl.terminate()
            ctl.wait(30)
            for n in nodes:
                n.stop()
            cluster.close()

    batches = math.ceil(AGENTS / MAX_UNAVAILABLE)
    ideal = batches * one
    cores = os.cpu_count() or 1
    # a batch of maxUnavailable agents cannot beat one node alone, nor the machine's cores
    cpu_ideal = batches * max(one, MAX_UNAVAILABLE * one / cores)
    per_node = len(mine) / AGENTS
    print(
        f"{AGENTS + 1} agents ready in {boot:.1f} s; one node alone updates in {one:.3f} s; "
        f"{batches} batches of {MAX_UNAVAILABLE}; ideal {ideal:.2f} s "
        f"(nodes / maxUnavailable x one node); on {cores} cores at best {cpu_ideal:.2f} s"
    )
    rows = [
        Row(
            f"rollout of {AGENTS} nodes, maxUnavailable {MAX_UNAVAILABLE}",
            wall,
            ideal,
            f"<= 1.5x {cpu_ideal:.1f} s ({cores} cores)",
            wall <= 1.5 * cpu_ideal,
        ),
        Row(
            "controller requests per node update",
            per_node,
            3.0,
            "<= 4 per node",
            per_node <= 4,
            unit="req",
        ),
    ]
    print_table(rows)
    sys.exit(0 if all(r.passed for r in rows) else 1)


if __name__ == "__main__":
    main()
