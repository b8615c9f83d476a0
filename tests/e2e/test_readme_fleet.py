"""The README's "A fleet: one token for the nodes of a pool" block, run as written (issue 43
item 3): a pool-scoped token for up to 20 nodes of ``worker``, two machines fetching with the
one pointer config, ``join-token list`` counting the uses, ``revoke`` refusing the rest."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from mcd.cluster.api import ApiError
from mcd.cluster.configs import MACHINECONFIGS
from mcd.cluster.pools import POOLS
from mcd.server.tokens import TOKEN_NAMESPACE
from tests.fakes.kubecluster import TestCluster
from tests.integration.test_server_ignition import (
    IGN33,
    MCD,
    ensure_pool_crd,
    rendered,
    start_server,
)
from tests.readme import commands, sh_blocks


def _worker_pool(cluster: TestCluster) -> str:
    ensure_pool_crd(cluster)
    config = cluster.name("rendered-worker")
    cluster.create(MACHINECONFIGS, rendered(config))
    cluster.create(POOLS, {
        "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
        "metadata": {"name": "worker"}, "spec": {"configuration": {"name": config}},
    })  # fmt: skip
    cluster.kube.request(
        "PATCH", f"{POOLS}/worker/status",
        body={"status": {"configuration": {"name": config}, "updatedMachineCount": 0}},
        content_type="application/merge-patch+json",
    )  # fmt: skip
    return config


def test_the_fleet_block(kube_cluster: TestCluster, tmp_path: Path) -> None:
    (block,) = sh_blocks("A fleet: one token for the nodes of a pool")
    steps = commands(block)
    assert [" ".join(s[:3]) for s in steps] == [
        "mcd join-token create", "mcd join-token list", "mcd join-token revoke"]  # fmt: skip
    cluster = kube_cluster
    _worker_pool(cluster)
    try:  # the install makes the tokens' namespace (daemonset/kubernetes/09-server.yaml)
        cluster.kube.request("POST", "/api/v1/namespaces", body={
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": TOKEN_NAMESPACE}})  # fmt: skip
    except ApiError as e:
        assert e.status == 409
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig)}
    server_ns = cluster.namespace("mcs")
    with start_server(cluster, tmp_path, server_ns, pool="worker",
                      token_namespace=TOKEN_NAMESPACE) as served:  # fmt: skip
        port = served.url.rsplit(":", 1)[1]

        def run(step: list[str], token_id: str = "") -> subprocess.CompletedProcess[str]:
            words = [w.replace("NODE-IP:30623", f"127.0.0.1:{port}")
                     .replace("server-ca.crt", str(served.ca)).replace("TOKEN-ID", token_id)
                     for w in step]  # fmt: skip
            if words[-2:] == [">", "fleet.ign"]:
                words = words[:-2]
            done = subprocess.run([*MCD, *words[1:]], check=False, capture_output=True,
                                  text=True, timeout=60, env=env)  # fmt: skip
            assert done.returncode == 0, done.stderr
            return done

        created = run(steps[0])
        pointer = json.loads(created.stdout)
        header = pointer["ignition"]["config"]["replace"]["httpHeaders"][0]["value"]
        token_id = header.split(" ", 1)[1].split(".")[1]
        assert (
            created.stderr == f"join token {token_id} for up to 20 nodes, pool worker, valid 1d\n"
        )
        assert pointer["ignition"]["config"]["replace"]["source"].endswith("/config/worker")
        for _ in range(2):  # two machines of the group boot with the same user data
            status, _body = served.get("/config/worker", {"Authorization": header, "Accept": IGN33})
            assert status == 200
        listed = run(steps[1]).stdout.splitlines()
        assert listed[0].split() == ["ID", "POOL", "NODES", "USES", "REMAINING", "EXPIRES",
                                     "USED", "FROM"]  # fmt: skip
        row = next(line.split() for line in listed if line.startswith(token_id))
        assert row[1:5] == ["worker", "(127.0.0.1),(127.0.0.1)", "2/20", "18"]
        revoked = run(steps[2], token_id)
        assert (
            revoked.stdout
            == f"join token {token_id} for 18 of 20 uses left, pool worker: revoked\n"
        )
        assert served.get("/config/worker", {"Authorization": header}) == (403, b"")
