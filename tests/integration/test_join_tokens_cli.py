"""``mcd join-token create|list|revoke`` as an operator runs them against the API server (the
fake one, or ``MCD_TEST_KUBECONFIG``), with ``mcd server`` as a process on 127.0.0.1:
create refuses what would leak or never work, in one line, before writing a Secret; list
shows each token's node, pool, expiry and use, never a token or its hash; a revoked token
is refused by the server."""

from __future__ import annotations

import json
import subprocess
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from mcd.model.ignition.dataurl import decode_data_url
from mcd.model.ignition.served import NODE_ANNOTATIONS
from mcd.server.tokens import JOINED_WITH, digest, issue
from tests.fakes.kubecluster import TestCluster
from tests.integration.test_server_ignition import (
    IGN33,
    MCD,
    list_token_secrets,
    make_pool,
    start_server,
)


def mcd(cluster: TestCluster, namespace: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MCD, "join-token", *args, "--kubeconfig", str(cluster.kubeconfig),
         "--namespace", namespace],
        check=False, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--server", "http://mcs.example:22623"], 64,
         "error: --server http://mcs.example:22623: not an https:// URL (the pointer config "
         "would send the token, and the server the node's pull secret, in clear)"),
        (["--server", "https://"], 64, "error: --server https://: not an https:// URL"),
        (["--pool", "../x", "--token-only"], 64,
         "error: --pool '../x' is not a pool name (lower-case letters, digits, '-' and '.')"),
        (["--pool", "a/b", "--token-only"], 64, "error: --pool 'a/b' is not a pool name"),
        (["--pool", "", "--token-only"], 64, "error: --pool '' is not a pool name"),
        (["--pool", "nosuchpool", "--token-only"], 1,
         "error: --pool nosuchpool: no such MachineConfigPool (kubectl get mcp lists them)"),
    ],
)  # fmt: skip
def test_create_refuses_in_one_line_before_writing_a_secret(
    kube_cluster: TestCluster, args: list[str], code: int, message: str
) -> None:
    namespace = kube_cluster.namespace("tokens")
    pool = make_pool(kube_cluster, "jt")
    if "--pool" not in args:
        args = [*args, "--pool", pool]
    done = mcd(kube_cluster, namespace, "create", "node-a", *args)
    assert done.returncode == code, done.stderr
    assert done.stderr.startswith(message), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and done.stdout == ""
    assert list_token_secrets(kube_cluster, namespace) == []


def test_list_shows_use_never_the_token_and_revoke_makes_the_server_refuse(
    kube_cluster: TestCluster, tmp_path: Path
) -> None:
    namespace = kube_cluster.namespace("mcs")
    tokens_ns = kube_cluster.namespace("tokens")
    pool = make_pool(kube_cluster, "jt")
    with start_server(kube_cluster, tmp_path, namespace, pool=pool, token_namespace=tokens_ns) as s:
        assert mcd(kube_cluster, tokens_ns, "list").stderr.startswith("No join tokens")
        token_a = s.token("node-a").strip()
        token_b = s.token("node-b", ttl="3h").strip()
        token_c = s.token("node-c").strip()
        status, _ = s.get(
            f"/config/{pool}", {"authorization": f"Bearer {token_a}", "Accept": IGN33}
        )
        assert status == 200, s.log.read_text()

        listed = mcd(kube_cluster, tokens_ns, "list")
        assert listed.returncode == 0, listed.stderr
        lines = listed.stdout.splitlines()
        assert lines[0].split() == [
            "ID", "POOL", "NODES", "USES", "REMAINING", "EXPIRES", "USED", "FROM"]  # fmt: skip
        rows = {line.split()[2]: line.split() for line in lines[1:]}
        assert set(rows) == {"node-a", "node-b", "node-c"}
        assert rows["node-a"][1] == pool and rows["node-a"][3:7] == ["1/1", "0", "in", "59m"]
        assert rows["node-a"][7].endswith("s") and rows["node-a"][8:] == ["ago", "127.0.0.1"]
        assert rows["node-b"][3:] == ["0/1", "1", "in", "179m", "no", "-"]
        for token in (token_a, token_b, token_c):
            assert token not in listed.stdout and digest(token) not in listed.stdout
            assert token.split(".")[2] not in listed.stdout

        by_node = mcd(kube_cluster, tokens_ns, "revoke", "node-b")
        token_id_b = token_b.split(".")[1]
        assert by_node.returncode == 0, by_node.stderr
        assert by_node.stdout == f"join token {token_id_b} for node node-b, pool {pool}: revoked\n"
        token_id_c = token_c.split(".")[1]
        by_id = mcd(kube_cluster, tokens_ns, "revoke", token_id_c)
        assert by_id.returncode == 0 and token_id_c in by_id.stdout
        for token in (token_b, token_c):
            assert s.get(f"/config/{pool}", {"Authorization": f"Bearer {token}"}) == (403, b"")
        assert f"unknown join token {token_id_b}" in s.log.read_text()
        left = mcd(kube_cluster, tokens_ns, "list").stdout
        assert "node-a" in left and "node-b" not in left and "node-c" not in left
        again = mcd(kube_cluster, tokens_ns, "revoke", "node-b")
        assert again.returncode == 1
        assert again.stderr.strip() == (
            f"error: no join token with ID or for node 'node-b' in namespace {tokens_ns}"
        )


def _joined_with(body: bytes) -> str:
    """The ``joined-with`` annotation of a served document's node-annotations file."""
    for f in json.loads(body)["storage"]["files"]:
        if f["path"] == NODE_ANNOTATIONS:
            return str(json.loads(decode_data_url(f["contents"]["source"]))[JOINED_WITH])
    raise AssertionError("no node-annotations file served")


def test_a_pool_token_serves_n_racing_nodes_and_list_names_the_nodes_served(
    kube_cluster: TestCluster, tmp_path: Path
) -> None:
    """Issue 43 item 3: ``create --pool P --uses 3`` with no node; six nodes racing with it
    get three configs and three 403s (each use recorded by a conditional write); the nodes
    that registered are named by ``list``; HEAD answers a valid token as an invalid one."""
    namespace, tokens_ns = kube_cluster.namespace("mcs"), kube_cluster.namespace("tokens")
    pool = make_pool(kube_cluster, "fleet")
    for args in (["node-a", "--uses", "2"], []):  # NODE or --uses, one of them
        wrong = mcd(kube_cluster, tokens_ns, "create", *args, "--pool", pool, "--token-only")
        assert (
            wrong.returncode == 64 and "give NODE (one node, one use) or --uses N" in wrong.stderr
        )
    with start_server(kube_cluster, tmp_path, namespace, pool=pool, token_namespace=tokens_ns) as s:
        created = mcd(kube_cluster, tokens_ns, "create", "--pool", pool, "--uses", "3",
                      "--ttl", "2h", "--token-only")  # fmt: skip
        assert created.returncode == 0, created.stderr
        token = created.stdout.strip()
        token_id = token.split(".")[1]
        assert created.stderr == f"join token {token_id} for up to 3 nodes, pool {pool}, valid 2h\n"
        head = {"Authorization": f"Bearer {token}"}
        assert s.head(f"/config/{pool}", head) == s.head(f"/config/{pool}", {}) == 403

        results: list[tuple[int, bytes]] = []
        lock = threading.Lock()

        def one() -> None:
            got = s.get(f"/config/{pool}", {"Authorization": f"Bearer {token}", "Accept": IGN33})
            with lock:
                results.append(got)

        threads = [threading.Thread(target=one) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert sorted(code for code, _ in results) == [200, 200, 200, 403, 403, 403]
        uses = sorted(_joined_with(body) for code, body in results if code == 200)
        assert len(set(uses)) == 3 and all(u.startswith(f"{token_id}.") for u in uses)
        assert "used up (3 uses)" in s.log.read_text()

        # two of the three nodes registered; their agents copied the file onto their Node
        a = kube_cluster.node("fleet-a", {JOINED_WITH: uses[0]})
        b = kube_cluster.node("fleet-b", {JOINED_WITH: uses[1]})
        listed = mcd(kube_cluster, tokens_ns, "list", "-o", "json")
        assert listed.returncode == 0, listed.stderr
        (row,) = [r for r in json.loads(listed.stdout) if r["id"] == token_id]
        assert (row["pool"], row["uses"], row["remaining"]) == (pool, "3/3", "0")
        assert sorted(row["nodes"].split(",")) == sorted([a, b, "(127.0.0.1)"])
        assert token not in listed.stdout and digest(token) not in listed.stdout

        revoked = mcd(kube_cluster, tokens_ns, "revoke", token_id)
        assert (
            revoked.stdout == f"join token {token_id} for 0 of 3 uses left, pool {pool}: revoked\n"
        )


def test_a_token_secret_in_the_old_label_domain_still_serves(
    kube_cluster: TestCluster, tmp_path: Path
) -> None:
    """A Secret written before the move to ``mcd-project.github.io/`` (label, type in
    ``mcd.openshift.io/``): listed, and its token serves once, its use recorded."""
    namespace, tokens_ns = kube_cluster.namespace("mcs"), kube_cluster.namespace("tokens")
    pool = make_pool(kube_cluster, "old")
    issued = issue("node-old", pool, timedelta(hours=1), datetime.now(UTC))
    old = {**issued.secret, "type": "mcd.openshift.io/join-token"}
    old["metadata"] = {**old["metadata"], "labels": {"mcd.openshift.io/join-token": "true"}}
    kube_cluster.kube.request("POST", f"/api/v1/namespaces/{tokens_ns}/secrets", body=old)
    with start_server(kube_cluster, tmp_path, namespace, pool=pool, token_namespace=tokens_ns) as s:
        assert issued.token_id in mcd(kube_cluster, tokens_ns, "list").stdout
        headers = {"Authorization": f"Bearer {issued.token}", "Accept": IGN33}
        assert s.get(f"/config/{pool}", headers)[0] == 200
        assert s.get(f"/config/{pool}", headers) == (403, b"")
        row = mcd(kube_cluster, tokens_ns, "list").stdout.splitlines()[1].split()
        assert row[2:5] == ["node-old", "1/1", "0"]
