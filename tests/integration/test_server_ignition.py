"""``mcd server`` against its real client: CoreOS Ignition (the ``ignition`` Debian package)
fetches a pointer config's target over TLS, with its own Accept header and the join token
from ``mcd join-token create``, and writes a temp root; every other request is refused.

The server runs as a process (``mcd server``) on 127.0.0.1 over the fake API server (or
``MCD_TEST_KUBECONFIG``), and is stopped by its pid."""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from mcd.cluster.api import ApiError
from mcd.cluster.configs import MACHINECONFIGS
from mcd.cluster.pools import POOLS
from mcd.model.ignition.dataurl import encode_data_url
from mcd.model.ignition.served import Extras, served_config
from mcd.server.tokens import secret_name
from tests.fakes.kubecluster import TestCluster
from tests.fakes.realcluster import install_crd
from tests.unit.test_server_http import _cert

IGNITION = Path("/usr/lib/dracut/modules.d/30ignition/ignition")
MCD = [str(Path(sys.executable).parent / "mcd")]
SECRET = b"pull-secret-do-not-leak\n"
IGN33 = "application/vnd.coreos.ignition+json;version=3.3.0, */*;q=0.1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Served:
    cluster: TestCluster
    namespace: str
    pool: str
    other_pool: str
    url: str
    ca: Path
    log: Path
    proc: subprocess.Popen[bytes]

    def token(
        self, node: str, pool: str | None = None, ttl: str = "1h", pointer: bool = False
    ) -> str:
        args = [
            *MCD,
            "join-token",
            "create",
            node,
            "--pool",
            pool or self.pool,
            "--ttl",
            ttl,
            "--kubeconfig",
            str(self.cluster.kubeconfig),
            "--namespace",
            self.namespace,
        ]
        args += ["--server", self.url, "--ca", str(self.ca)] if pointer else ["--token-only"]
        done = subprocess.run(args, check=False, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout

    def head(self, path: str, headers: dict[str, str]) -> int:
        context = ssl.create_default_context(cafile=str(self.ca))
        port = int(self.url.rsplit(":", 1)[1])
        conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=20, context=context)
        try:
            conn.request("HEAD", path, headers=headers)
            return conn.getresponse().status
        finally:
            conn.close()

    def get(self, path: str, headers: dict[str, str]) -> tuple[int, bytes]:
        context = ssl.create_default_context(cafile=str(self.ca))
        port = int(self.url.rsplit(":", 1)[1])
        conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=20, context=context)
        try:
            conn.request("GET", path, headers=headers)
            r = conn.getresponse()
            return r.status, r.read()
        finally:
            conn.close()


def rendered(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": {"name": name},
        "spec": {
            "config": {
                "ignition": {"version": "3.5.0"},
                "storage": {
                    "files": [
                        {
                            "path": "/etc/mcd-joined",
                            "mode": 0o600,
                            "contents": {"source": encode_data_url(SECRET)},
                        }
                    ]
                },
                "systemd": {
                    "units": [
                        {
                            "name": "joined.service",
                            "enabled": True,
                            "contents": "[Unit]\nDescription=x\n[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n",
                        }
                    ]
                },
            }
        },
    }


POOL_CRD = (
    Path(__file__).resolve().parents[2] / "daemonset/kubernetes/04-machineconfigpool-crd.yaml"
)


def ensure_pool_crd(cluster: TestCluster) -> None:
    """On a real cluster, the MachineConfigPool CRD (the fake serves pools built in); left
    installed, as the controller's e2e tests leave it."""
    if cluster.fake is not None:
        return
    install_crd(cluster.kube, yaml.safe_load(POOL_CRD.read_text()), POOLS)


def make_pool(cluster: TestCluster, base: str) -> str:
    ensure_pool_crd(cluster)
    name = cluster.name(base)
    config = f"rendered-{name}-1"
    cluster.create(MACHINECONFIGS, rendered(config))
    cluster.create(
        POOLS,
        {
            "apiVersion": "machineconfiguration.openshift.io/v1",
            "kind": "MachineConfigPool",
            "metadata": {"name": name},
            "spec": {"configuration": {"name": config}},
        },
    )
    cluster.kube.request(
        "PATCH",
        f"{POOLS}/{name}/status",
        body={"status": {"configuration": {"name": config}, "updatedMachineCount": 0}},
        content_type="application/merge-patch+json",
    )
    return name


@contextlib.contextmanager
def start_server(
    cluster: TestCluster,
    tmp_path: Path,
    namespace: str,
    kubeconfig: Path | None = None,
    pool: str = "",
    other_pool: str = "",
    tokens: bool = True,
    token_namespace: str = "",
) -> Iterator[Served]:
    """``mcd server`` as a process on 127.0.0.1 (TLS, join tokens required, plain port off),
    on ``kubeconfig`` (default: the cluster's admin one), its join tokens in
    ``token_namespace`` (default: ``namespace``); stopped by its pid."""
    token_namespace = token_namespace or namespace
    cert, key = _cert(tmp_path / "pki", "mcs")
    port = free_port()
    log = tmp_path / "server.log"
    args = [*MCD, "server", "--kubeconfig", str(kubeconfig or cluster.kubeconfig),
            "--bind-address", "127.0.0.1", "--secure-port", str(port), "--insecure-port", "0",
            "--cert", str(cert), "--key", str(key), "--namespace", namespace,
            "--token-namespace", token_namespace]  # fmt: skip
    if tokens:
        args.append("--require-join-token")
    with log.open("wb") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)
    url = f"https://127.0.0.1:{port}"
    s = Served(cluster, token_namespace, pool, other_pool, url, cert, log, proc)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None, log.read_text()
                assert time.monotonic() < deadline, "mcd server did not listen"
                time.sleep(0.1)
        yield s
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        for name in list_token_secrets(cluster, token_namespace):
            path = f"/api/v1/namespaces/{token_namespace}/secrets/{name}"
            with contextlib.suppress(ApiError):
                cluster.kube.request("DELETE", path)


@pytest.fixture
def served(kube_cluster: TestCluster, tmp_path: Path) -> Iterator[Served]:
    namespace = kube_cluster.namespace("mcs")
    pool, other = make_pool(kube_cluster, "joiners"), make_pool(kube_cluster, "others")
    with start_server(kube_cluster, tmp_path, namespace, pool=pool, other_pool=other) as s:
        yield s


def list_token_secrets(cluster: TestCluster, namespace: str) -> list[str]:
    items = (
        cluster.kube.request("GET", f"/api/v1/namespaces/{namespace}/secrets").get("items") or []
    )
    return [i["metadata"]["name"] for i in items if i["metadata"]["name"].startswith("mcd-join-")]


def ignition_root(tmp: Path) -> Path:
    root = tmp / "root"
    (root / "etc/selinux/targeted/contexts/files").mkdir(parents=True)
    (root / "etc/selinux/config").write_text("SELINUX=disabled\nSELINUXTYPE=targeted\n")
    (root / "etc/selinux/targeted/contexts/files/file_contexts").write_text("")
    return root


def run_ignition(tmp: Path, pointer: str, root: Path | None = None) -> tuple[int, str, Path]:
    """Ignition's fetch and files stages, as a booting node runs them, into ``root`` (a new
    temp root with the SELinux files the files stage needs, by default)."""
    root = root or ignition_root(tmp)
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "pointer.ign").write_text(pointer)
    env = {**os.environ, "IGNITION_CONFIG_FILE": str(tmp / "pointer.ign")}
    out = ""
    for stage in ("fetch", "files"):
        done = subprocess.run(
            [str(IGNITION), "-platform", "file", "-stage", stage, "-root", str(root),
             "-config-cache", str(tmp / "cache.json"), "-state-file", str(tmp / "state"),
             "-log-to-stdout"],
            check=False, capture_output=True, text=True, env=env, timeout=120,
        )  # fmt: skip
        out += done.stdout + done.stderr
        if done.returncode != 0:
            return done.returncode, out, root
    return 0, out, root


needs_ignition = pytest.mark.skipif(
    not IGNITION.exists() or os.geteuid() != 0,
    reason="the real Ignition needs the `ignition` package (scripts/setup.sh, as root)",
)


@needs_ignition
def test_real_ignition_joins_with_a_token_once(served: Served, tmp_path: Path) -> None:
    pointer = served.token("node-a", pointer=True)
    doc = json.loads(pointer)
    token = doc["ignition"]["config"]["replace"]["httpHeaders"][0]["value"].split(" ", 1)[1]
    code, out, root = run_ignition(tmp_path / "first", pointer)
    assert code == 0, out
    assert (root / "etc/mcd-joined").read_bytes() == SECRET
    assert (root / "etc/mcd-joined").stat().st_mode & 0o777 == 0o600
    annotations = json.loads((root / "etc/machine-config-daemon/node-annotations.json").read_text())
    assert (
        annotations["machineconfiguration.openshift.io/currentConfig"]
        == f"rendered-{served.pool}-1"
    )
    assert annotations["machineconfiguration.openshift.io/state"] == "Done"
    encapsulated = json.loads((root / "etc/ignition-machine-config-encapsulated.json").read_text())
    assert encapsulated["spec"]["config"] == {"ignition": {"version": "3.3.0"}}
    assert (root / "etc/systemd/system/joined.service").exists()
    # the use is recorded on the Secret: which config, which spec, from where, by what
    token_id = token.split(".")[1]
    secret = served.cluster.kube.request(
        "GET", f"/api/v1/namespaces/{served.namespace}/secrets/{secret_name(token_id)}"
    )
    notes = secret["metadata"]["annotations"]
    assert notes["mcd-project.github.io/used"] == "true"
    assert notes["mcd-project.github.io/served-config"] == f"rendered-{served.pool}-1"
    assert notes["mcd-project.github.io/served-spec-version"] == "3.3.0"
    assert notes["mcd-project.github.io/used-by-user-agent"].startswith("Ignition/")
    assert token not in json.dumps(secret)  # only its hash is stored
    assert base64.b64decode(secret["data"]["node"]) == b"node-a"
    (use,) = json.loads(notes["mcd-project.github.io/uses"])
    assert use["node"] == "node-a" and use["config"] == f"rendered-{served.pool}-1"
    # the node carries the use it joined with (its agent copies the file onto its Node)
    assert annotations["mcd-project.github.io/joined-with"] == f"{token_id}.{use['id']}"
    # the same pointer again: the token is used up
    code, out, root = run_ignition(tmp_path / "again", pointer)
    assert code != 0 and not (root / "etc/mcd-joined").exists()
    assert "Forbidden" in out, out
    log = served.log.read_text()
    assert token not in log and SECRET.decode().strip() not in log
    assert "already used" in log and "User-Agent:'Ignition/" in log


def test_refusals(served: Served) -> None:
    path = f"/config/{served.pool}"
    assert served.get(path, {"Accept": IGN33}) == (403, b"")
    assert served.get(path, {"Authorization": "Bearer nonsense"}) == (403, b"")
    forged = "mcdjt.0123456789abcdef." + "A" * 43
    assert served.get(path, {"Authorization": f"Bearer {forged}"}) == (403, b"")
    other = served.token("node-b", pool=served.other_pool).strip()
    assert served.get(path, {"Authorization": f"Bearer {other}"}) == (403, b"")
    # right id, wrong secret part: compared by hash, refused
    tampered = other[:-4] + ("AAAA" if not other.endswith("AAAA") else "BBBB")
    assert served.get(f"/config/{served.other_pool}", {"Authorization": f"Bearer {tampered}"}) == (
        403,
        b"",
    )
    expiring = served.token("node-c", ttl="1s").strip()
    time.sleep(2.1)
    assert served.get(path, {"Authorization": f"Bearer {expiring}"}) == (403, b"")
    fresh = served.token("node-d").strip()
    status, body = served.get(path, {"Authorization": f"Bearer {fresh}", "Accept": IGN33})
    assert status == 200 and json.loads(body)["ignition"]["version"] == "3.3.0"
    assert served.get(path, {"Authorization": f"Bearer {fresh}", "Accept": IGN33}) == (403, b"")
    # an unknown pool is 403 too without a token: no probing which pools exist
    assert served.get("/config/no-such-pool", {}) == (403, b"")
    log = served.log.read_text()
    for word in (
        "no join token",
        "malformed join token",
        "unknown join token",
        "another pool",
        "wrong token",
        "expired",
        "already used",
    ):
        assert word in log, word
    for t in (other, expiring, fresh):
        assert t not in log


def test_join_applies_the_pool_config_once_through_the_once_from_gate(
    served: Served, tmp_path: Path, node_root: Path
) -> None:
    token = served.token("node-j").strip()
    token_file = tmp_path / "join-token"
    token_file.write_text(token + "\n")
    args = [*MCD, "join", "--server", f"{served.url}/config/{served.pool}", "--token-file",
            str(token_file), "--ca", str(served.ca), "--root", str(node_root), "--skip-reboot"]  # fmt: skip
    done = subprocess.run(args, check=False, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    config = f"rendered-{served.pool}-1"
    assert f"joined: {config} applied to {node_root}" in done.stdout
    assert (node_root / "etc/mcd-joined").read_bytes() == SECRET
    annotations = json.loads(
        (node_root / "etc/machine-config-daemon/node-annotations.json").read_text()
    )
    assert annotations["machineconfiguration.openshift.io/desiredConfig"] == config
    current = json.loads((node_root / "etc/machine-config-daemon/currentconfig").read_text())
    assert current["metadata"]["name"] == config
    assert not (node_root / "etc/ignition-machine-config-encapsulated.json").exists()
    assert (node_root / "etc/mcs-machine-config-content.json").stat().st_mode & 0o777 == 0o600
    assert not token_file.exists()  # used up
    assert token not in done.stdout + done.stderr
    # again, with the used token: refused, nothing written
    before = sorted(str(p) for p in node_root.rglob("*"))
    again = subprocess.run(
        [*MCD, "join", "--server", served.url, "--pool", served.pool, "--token", token,
         "--ca", str(served.ca), "--root", str(node_root), "--skip-reboot"],
        check=False, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert again.returncode == 1 and "403" in again.stderr
    assert sorted(str(p) for p in node_root.rglob("*")) == before
    assert token not in again.stdout + again.stderr


def test_one_token_racing_from_many_clients_serves_the_config_once(served: Served) -> None:
    token = served.token("node-race").strip()
    headers = {"Authorization": f"Bearer {token}", "Accept": IGN33}
    results: list[int] = []
    lock = threading.Lock()

    def one() -> None:
        status, _ = served.get(f"/config/{served.pool}", headers)
        with lock:
            results.append(status)

    threads = [threading.Thread(target=one) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(results) == [200] + [403] * 7


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_many_concurrent_requests_bounded_memory_no_leaked_descriptors(
    kube_cluster: TestCluster, tmp_path: Path
) -> None:
    """Rounds of 300 requests, 30 at a time (more than the 16 workers), to the real process:
    each answered 200 or closed at once; after the first round (which fills the API client's
    connection pool), the second leaves memory and open descriptors where they were."""
    namespace = kube_cluster.namespace("mcs")
    pool = make_pool(kube_cluster, "load")
    with start_server(kube_cluster, tmp_path, namespace, pool=pool, tokens=False) as s:
        path = f"/config/{pool}"

        def round_of(clients: int = 30, each: int = 10) -> tuple[list[int], float]:
            results: list[int] = []
            lock = threading.Lock()

            def some() -> None:
                for _ in range(each):
                    try:
                        status = s.get(path, {"Accept": IGN33})[0]
                    except OSError:
                        status = -1
                    with lock:
                        results.append(status)

            threads = [threading.Thread(target=some) for _ in range(clients)]
            start = time.monotonic()
            for t in threads:
                t.start()
            for t in threads:
                t.join(120)
            return results, time.monotonic() - start

        first, _ = round_of()
        time.sleep(0.5)
        fds, rss = len(os.listdir(f"/proc/{s.proc.pid}/fd")), _rss_kb(s.proc.pid)
        second, elapsed = round_of()
        time.sleep(0.5)
        after_fds, after_rss = len(os.listdir(f"/proc/{s.proc.pid}/fd")), _rss_kb(s.proc.pid)
        for results in (first, second):
            assert len(results) == 300 and set(results) <= {200, -1}, set(results)
            assert results.count(200) >= 250
        assert after_fds <= fds + 2, (fds, after_fds)
        assert after_rss - rss < 20_000, (rss, after_rss)  # KiB
        assert elapsed < 100


@pytest.mark.skipif(shutil.which("ignition-validate") is None, reason="needs ignition-validate")
@pytest.mark.parametrize("version", ["3.0.0", "3.1.0", "3.2.0", "3.3.0"])
def test_ignition_validate_accepts_every_served_version_it_reads(
    version: str, tmp_path: Path
) -> None:
    """Ignition's own verdict (2.14 reads 3.0-3.3) on a served document: no error, no warning."""
    config = rendered("rendered-worker-1")
    config["spec"]["config"]["kernelArguments"] = {"shouldExist": ["nosmt"]}
    extras = Extras(kubelet_ca=b"-----BEGIN CERTIFICATE-----\n", kubeconfig=b"apiVersion: v1\n")
    path = tmp_path / "served.ign"
    path.write_bytes(served_config(config, "rendered-worker-1", version, extras))
    done = subprocess.run(
        ["ignition-validate", str(path)], check=False, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and not (done.stdout + done.stderr).strip(), (
        done.stdout + done.stderr
    )
