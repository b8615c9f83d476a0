"""``mcd join-token create|list|revoke`` as an operator runs them against the API server (the
fake one, or ``MCD_TEST_KUBECONFIG``), with ``mcd server`` as a process on 127.0.0.1:
create refuses what would leak or never work, in one line, before writing a Secret; list
shows each token's node, pool, expiry and use, never a token or its hash; a revoked token
is refused by the server."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mcd.server.tokens import digest
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
        assert lines[0].split() == ["ID", "NODE", "POOL", "EXPIRES", "USED", "FROM"]
        rows = {line.split()[1]: line.split() for line in lines[1:]}
        assert set(rows) == {"node-a", "node-b", "node-c"}
        assert rows["node-a"][2] == pool and rows["node-a"][3:5] == ["in", "59m"]
        assert rows["node-a"][5].endswith("s") and rows["node-a"][6:] == ["ago", "127.0.0.1"]
        assert rows["node-b"][3:] == ["in", "179m", "no", "-"]
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
