"""The README's command blocks, run as written against a real kube-apiserver (issue 40: the
docs cannot rot): "Install on a cluster", the quick start ("Plain Kubernetes: quick start").

Substituted only where a test must: ``NODE`` by the test's node names, the kubeconfig, and
``kubectl get mcp -w`` (it never ends) by waiting for what it would show. The DaemonSet's and
the Deployments' pods cannot run on the kubelet stand-in, so the agents and the controller run
as host processes on temp roots, as the e2e harness does, each with the credentials its pod
would have: an agent a token of ServiceAccount ``mcd`` bound to the DaemonSet's pod on its
node (so the Own-Node admission policy the install applies judges it), the controller a
token of ``mcd-controller``. Real cluster only: the fake API server establishes no CRDs and
has no DaemonSet controller."""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import shutil
import socket
import ssl
import subprocess
import sys
import urllib.parse
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from mcd.cluster.api import ApiError
from mcd.cluster.configs import MACHINECONFIGS
from mcd.cluster.pools import POOLS
from mcd.model.vocabulary import Annotation
from tests.e2e.controller_harness import ControllerProc, Rebooter, get_pool, pool_condition, wait
from tests.e2e.harness import REPO, AgentNode, free_port
from tests.e2e.test_own_node_admission import bind_once, bound_kubeconfig
from tests.fakes.kubecluster import TestCluster
from tests.manifests import KUBERNETES, identity, objects
from tests.readme import commands, sh_blocks

Obj = dict[str, Any]
Words = list[str]
LEASES = "/apis/coordination.k8s.io/v1/namespaces/mcd/leases"
REAL_ONLY = "the fake API server establishes no CRDs and runs no DaemonSet controller"


class Shell:
    """Runs a README command against the test cluster, from the checkout (its paths are the
    checkout's): ``kubectl`` with the cluster's kubeconfig, ``mcd`` as this checkout's."""

    def __init__(self, cluster: TestCluster, tmp_path: Path) -> None:
        self.cluster = cluster
        self.cache = tmp_path / "kubectl-cache"

    def run(self, words: Words) -> subprocess.CompletedProcess[str]:
        program, *args = words
        if program == "kubectl":
            kubectl = shutil.which("kubectl")  # the one the tests use (Debian's in CI)
            assert kubectl, "kubectl is not installed: run scripts/setup.sh"
            argv = [
                kubectl,
                f"--kubeconfig={self.cluster.kubeconfig}",
                f"--cache-dir={self.cache}",
            ]
        elif program == "mcd":
            argv = [sys.executable, "-m", "mcd"]
        else:
            raise AssertionError(f"README command this test cannot run: {' '.join(words)}")
        env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO),
               "KUBECONFIG": str(self.cluster.kubeconfig), "HOME": str(self.cache)}  # fmt: skip
        return subprocess.run(
            [*argv, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=180,
            check=False,
        )  # fmt: skip

    def ok(self, words: Words) -> str:
        done = self.run(words)
        assert done.returncode == 0, f"{' '.join(words)}: {done.stderr}"
        return done.stdout


def _exists(cluster: TestCluster, shell: Shell, ident: tuple[str, str, str]) -> bool:
    kind, ns, name = ident
    got = shell.run(["kubectl", "get", "--ignore-not-found", "-o", "name",
                     *(["-n", ns] if ns else []), f"{kind.lower()}/{name}"])  # fmt: skip
    return bool(got.stdout.strip())


@pytest.fixture
def install_cleanup(kube_cluster: TestCluster, tmp_path: Path) -> Iterator[Shell]:
    """A shell, and after the test the install's objects it created are deleted again (the
    CRDs and the namespace stay: the session's other tests use the same ones), so its
    admission policies never judge another test's requests."""
    if kube_cluster.fake is not None:
        pytest.skip(REAL_ONLY)
    shell = Shell(kube_cluster, tmp_path)
    expected = [identity(d) for d in objects(KUBERNETES)]
    before = {i for i in expected if _exists(kube_cluster, shell, i)}
    leases = set(_leases(kube_cluster))
    try:
        yield shell
    finally:
        for name in set(_leases(kube_cluster)) - leases:  # the controller's, the agents'
            with contextlib.suppress(ApiError):
                kube_cluster.kube.request("DELETE", f"{LEASES}/{name}")
        made = [i for i in expected if i not in before
                and i[0] not in ("CustomResourceDefinition", "Namespace")]  # fmt: skip
        for kind, ns, name in reversed(made):
            shell.run(["kubectl", "delete", "--ignore-not-found", "--wait=true",
                       *(["-n", ns] if ns else []), f"{kind.lower()}/{name}"])  # fmt: skip


def _leases(cluster: TestCluster) -> list[str]:
    with contextlib.suppress(ApiError):
        items = cluster.kube.request("GET", LEASES).get("items") or []
        return [i["metadata"]["name"] for i in items]
    return []


def test_install_on_a_cluster(install_cleanup: Shell) -> None:
    """The section's first block as written: the plain overlay applied, its CRDs Established
    (`kubectl wait` exits 0 only then), the agent, the controller, the server and the
    NetworkPolicies there."""
    (block, *_) = sh_blocks("Install on a cluster")
    steps = commands(block)
    assert [s[:3] for s in steps] == [
        ["kubectl", "apply", "-k"], ["kubectl", "wait", "--for"], ["kubectl", "-n", "mcd"],
    ]  # fmt: skip
    outputs = [install_cleanup.ok(step) for step in steps]
    assert "customresourcedefinition.apiextensions.k8s.io/machineconfigpools" in outputs[0]
    assert outputs[1].count("condition met") == 2
    listed = outputs[2]
    for name in ("daemonset.apps/mcd", "deployment.apps/mcd-controller",
                 "deployment.apps/mcd-server", "networkpolicy.networking.k8s.io/mcd-server"):  # fmt: skip
        assert name in listed, listed


def test_the_openshift_block_installs_only_the_agent_overlay() -> None:
    """What the OpenShift block applies is the OpenShift overlay (no CRD, no controller, no
    server: tests/integration/test_manifests.py), after the operator is stopped, and it
    never applies the plain overlay."""
    (block,) = sh_blocks("OpenShift: the agent only")
    steps = commands(block)
    applied = [s[s.index("-k") + 1] for s in steps if s[:2] == ["oc", "apply"]]
    assert applied == ["daemonset/openshift"]
    verbs = [" ".join(s[:2] + s[3:5]) if s[1] == "-n" else " ".join(s[:3]) for s in steps]
    stop = verbs.index("oc -n scale deployment/machine-config-operator")
    delete = verbs.index("oc -n delete daemonset/machine-config-daemon")
    assert verbs[0] == "oc patch clusterversion" and 0 < stop < delete
    assert delete < next(i for i, s in enumerate(steps) if s[:2] == ["oc", "apply"])
    override = yaml.safe_load(steps[0][steps[0].index("-p") + 1])
    ((op,),) = [override]
    assert op["path"] == "/spec/overrides"
    assert op["value"] == [{"kind": "Deployment", "group": "apps",
                            "namespace": "openshift-machine-config-operator",
                            "name": "machine-config-operator", "unmanaged": True}]  # fmt: skip


# -- the quick start ----------------------------------------------------------------------------


class PodAgent(AgentNode):
    """A node's agent as the DaemonSet's pod on it runs: with a token bound to that pod."""

    kubeconfig: Path | None = None

    def command(self, metrics_port: int | None = None) -> list[str]:
        argv = super().command(metrics_port)
        if self.kubeconfig is not None:
            argv[argv.index("--kubeconfig") + 1] = str(self.kubeconfig)
        return argv


def daemonset_pod_on(cluster: TestCluster, node: str, timeout: float = 60.0) -> Obj:
    """The pod the DaemonSet controller made for ``node`` (bound to it as the scheduler
    would: no scheduler runs here)."""
    found: list[Obj] = []

    def made() -> bool:
        pods = cluster.kube.request("GET", "/api/v1/namespaces/mcd/pods",
                                    {"labelSelector": "app.kubernetes.io/name=mcd"})["items"]  # fmt: skip
        found[:] = [p for p in pods if _for_node(p) == node]
        return bool(found)

    wait(made, timeout, f"the DaemonSet's pod for {node}")
    pod = found[0]
    if not pod["spec"].get("nodeName"):
        bind_once(cluster, pod, node)
    return pod


def _for_node(pod: Obj) -> str | None:
    if pod["spec"].get("nodeName"):
        return str(pod["spec"]["nodeName"])
    terms = (((pod["spec"].get("affinity") or {}).get("nodeAffinity") or {})
             .get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or []  # fmt: skip
    for term in terms:
        for field in term.get("matchFields") or []:
            if field["key"] == "metadata.name" and field["values"]:
                return str(field["values"][0])
    return None


def _token_kubeconfig(cluster: TestCluster, account: str, path: Path) -> Path:
    return bound_kubeconfig(cluster, None, path, service_account=account)


def _pool_done(cluster: TestCluster, nodes: list[AgentNode], rendered: str) -> bool:
    """`kubectl get mcp` would show it: the pool Updated on ``rendered``, every node Done."""
    pool = get_pool(cluster, "worker")
    status = pool.get("status") or {}
    if (status.get("configuration") or {}).get("name") != rendered:
        return False
    if pool_condition(cluster, "worker", "Updated").get("status") != "True":
        return False
    if status.get("updatedMachineCount") != len(nodes):
        return False
    return all(
        (n.annotations().get(Annotation.CURRENT_CONFIG), n.state()) == (rendered, "Done")
        for n in nodes
    )


def _target(cluster: TestCluster) -> str:
    with contextlib.suppress(ApiError):
        return str(
            ((get_pool(cluster, "worker").get("spec") or {}).get("configuration") or {}).get("name")
            or ""
        )
    return ""


@pytest.fixture
def quick_start_cleanup(kube_cluster: TestCluster) -> Iterator[None]:
    """The quick start's pool and MachineConfigs (and the rendered ones) removed after."""
    yield
    if kube_cluster.fake is not None:
        return
    for path in (
        f"{POOLS}/worker",
        f"{MACHINECONFIGS}/00-worker",
        f"{MACHINECONFIGS}/50-worker-chrony",
    ):
        with contextlib.suppress(ApiError):
            kube_cluster.kube.request("DELETE", path)
    for mc in kube_cluster.kube.request("GET", MACHINECONFIGS).get("items") or []:
        if mc["metadata"]["name"].startswith("rendered-worker-"):
            with contextlib.suppress(ApiError):
                kube_cluster.kube.request("DELETE", f"{MACHINECONFIGS}/{mc['metadata']['name']}")


def test_the_quick_start(
    install_cleanup: Shell, quick_start_cleanup: None, kube_cluster: TestCluster, tmp_path: Path
) -> None:
    """The quick start's block, command by command: the install, the nodes labelled, the
    pool and its base applied (the nodes end Done on the pool's first rendered config), a
    change applied (a new rendered config rolls out: the pool Updated, every node Done on
    it), `mcd plan --pool worker` and `kubectl describe mcp worker`."""
    shell, cluster = install_cleanup, kube_cluster
    (block,) = sh_blocks("Plain Kubernetes: quick start")
    steps = commands(block)
    nodes: list[PodAgent] = []
    ctl: ControllerProc | None = None
    handlers: dict[str, Callable[[Words], None]] = {}
    seen: list[str] = []
    first = ""

    def install(step: Words) -> None:
        nonlocal ctl
        shell.ok(step)
        # the DaemonSet's pods start an agent on each node; the Deployment a controller
        for i in range(2):
            node = PodAgent(cluster, tmp_path / f"node-{i}", f"qs{i}", drain_mode="controller")
            nodes.append(node)
        shell.ok(["kubectl", "wait", "--for", "condition=Established",
                  "crd/machineconfigs.machineconfiguration.openshift.io"])  # fmt: skip
        for node in nodes:  # what a kubelet labels its Node with (the DaemonSet selects it)
            cluster.kube.request(
                "PATCH", f"/api/v1/nodes/{node.name}",
                body={"metadata": {"labels": {"kubernetes.io/os": "linux"}}},
                content_type="application/merge-patch+json",
            )  # fmt: skip
        for node in nodes:
            pod = daemonset_pod_on(cluster, node.name)
            node.kubeconfig = bound_kubeconfig(cluster, pod, node.workdir / "pod.kubeconfig")
            node.start()
        account = _token_kubeconfig(cluster, "mcd-controller", tmp_path / "controller.kubeconfig")
        ctl = ControllerProc(cluster, tmp_path, "qs", "mcd").start("--kubeconfig", str(account))

    def label(step: Words) -> None:
        for node in nodes:
            shell.ok([node.name if w == "NODE" else w for w in step])

    def get_watch(step: Words) -> None:
        nonlocal first
        assert ctl is not None
        wait(
            lambda: _target(cluster).startswith("rendered-worker-"), 60, "worker rendered", ctl.log
        )
        first = _target(cluster)
        # from the empty config every file is new: a reboot (the Rebooter boots the node)
        with Rebooter(list(nodes)) as rebooter:
            wait(lambda: _pool_done(cluster, list(nodes), first), 180,
                 f"every node Done on {first}", ctl.log, *(n.log for n in nodes))  # fmt: skip
            assert not rebooter.errors, rebooter.errors
        shown = shell.ok([w for w in step if w != "-w"])
        assert "worker" in shown and first in shown

    def change(step: Words) -> None:
        assert ctl is not None
        shell.ok(step)
        wait(lambda: _target(cluster) not in ("", first), 60, "worker re-rendered", ctl.log)
        second = _target(cluster)
        before = {n.name: n.reboots_requested() for n in nodes}
        with Rebooter(list(nodes)) as rebooter:
            wait(lambda: _pool_done(cluster, list(nodes), second), 300,
                 f"every node Done on {second}", ctl.log, *(n.log for n in nodes))  # fmt: skip
            assert not rebooter.errors, rebooter.errors
        for node in nodes:
            assert (
                node.path("/etc/chrony.d/50-pool.conf").read_text()
                == "pool time.example.com iburst\n"
            )
            assert node.reboots_requested() == before[node.name] + 1  # nosmt: a reboot

    def plan(step: Words) -> None:
        out = shell.ok(step)
        assert all(n.name in out for n in nodes), out

    def describe(step: Words) -> None:
        out = shell.ok(step)
        assert "Updated" in out and _target(cluster) in out, out

    handlers = {
        "kubectl apply -k": install,
        "kubectl wait --for": lambda step: seen.append(shell.ok(step)),
        "kubectl label node": label,
        "kubectl apply -f examples/pools/00-worker.yaml": lambda step: seen.append(shell.ok(step)),
        "kubectl get mcp": get_watch,
        "kubectl apply -f examples/pools/50-worker-chrony.yaml": change,
        "mcd plan --pool": plan,
        "kubectl describe mcp": describe,
    }
    try:
        for step in steps:
            line = " ".join(step)
            keys = [k for k in handlers if line.startswith(k)]
            assert len(keys) == 1, f"a README command this test does not know: {line}"
            handlers[keys[0]](step)
        assert first and _target(cluster) != first
    finally:
        if ctl is not None:
            ctl.stop()
        for node in nodes:
            node.close()


# -- add a node -----------------------------------------------------------------------------------


def _server_args(port: int, tls: Path, kubeconfig: Path) -> list[str]:
    """``mcd server`` as the plain overlay's Deployment runs it, on 127.0.0.1:``port``, with
    the Secret's files where the pod mounts them (``tls``) and its ServiceAccount's token."""
    deploy = next(d for d in objects(KUBERNETES)
                  if d["kind"] == "Deployment" and d["metadata"]["name"] == "mcd-server")  # fmt: skip
    (container,) = deploy["spec"]["template"]["spec"]["containers"]
    (mount,) = [m for m in container["volumeMounts"] if m["name"] == "tls"]
    args = [a.replace(mount["mountPath"], str(tls)) for a in container["args"]]
    return [*args, "--bind-address", "127.0.0.1", "--secure-port", str(port),
            "--kubeconfig", str(kubeconfig)]  # fmt: skip


def _fetch(pointer: Obj, ca: Path) -> tuple[int, bytes]:
    """What Ignition does with the pointer config: GET its URL with its headers, trusting
    its CA."""
    source = pointer["ignition"]["config"]["replace"]
    url = urllib.parse.urlsplit(source["source"])
    headers = {h["name"]: h["value"] for h in source.get("httpHeaders") or []}
    headers["Accept"] = "application/vnd.coreos.ignition+json;version=3.4.0, */*;q=0.1"
    context = ssl.create_default_context(cafile=str(ca))
    conn = http.client.HTTPSConnection(url.hostname or "", url.port, timeout=30, context=context)
    try:
        conn.request("GET", url.path, headers=headers)
        answer = conn.getresponse()
        return answer.status, answer.read()
    finally:
        conn.close()


def _self_signed(directory: Path) -> tuple[Path, Path, Path]:
    """server.crt/server.key naming 127.0.0.1, and server-ca.crt (itself)."""
    directory.mkdir(parents=True, exist_ok=True)
    crt, key, ca = directory / "server.crt", directory / "server.key", directory / "server-ca.crt"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-days", "2", "-subj", "/CN=mcd-server", "-addext",
         "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(crt)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    ca.write_bytes(crt.read_bytes())
    return crt, key, ca


def test_add_a_node(
    install_cleanup: Shell, quick_start_cleanup: None, kube_cluster: TestCluster, tmp_path: Path
) -> None:
    """The "Add a node" block on the quick start's pool: the TLS Secret, the install, a join
    token as the machine's user data, the machine's Ignition fetching its pool's config once
    with it (a second fetch is refused), and the server's log naming the node."""
    shell, cluster = install_cleanup, kube_cluster
    (block,) = sh_blocks("Add a node")
    steps = commands(block)
    crt, key, ca = _self_signed(tmp_path / "pki")
    port = free_port()
    files = {"server.crt": str(crt), "server.key": str(key), "server-ca.crt": str(ca),
             "NODE-IP:30623": f"127.0.0.1:{port}"}  # fmt: skip

    def substituted(step: Words) -> Words:
        out = []
        for word in step:
            new = word
            for old, value in files.items():
                new = new.replace(old, value)
            out.append(new)
        return out

    ctl: ControllerProc | None = None
    server: subprocess.Popen[bytes] | None = None
    server_log = tmp_path / "server.log"
    user_data = tmp_path / "worker-7.ign"
    try:
        # the quick start's pool (no node yet), rendered by the controller
        for step in steps:
            line = " ".join(step)
            if line.startswith("kubectl -n mcd create secret tls"):
                shell.ok(substituted(step))
            elif line.startswith("kubectl apply -k"):
                shell.ok(step)
                shell.ok(["kubectl", "wait", "--for", "condition=Established",
                          "crd/machineconfigpools.machineconfiguration.openshift.io"])  # fmt: skip
                shell.ok(["kubectl", "apply", "-f", "examples/pools/00-worker.yaml",
                          "-f", "examples/pools/worker.yaml"])  # fmt: skip
                account = _token_kubeconfig(cluster, "mcd-controller", tmp_path / "ctl.kubeconfig")
                ctl = ControllerProc(cluster, tmp_path, "an", "mcd").start(
                    "--kubeconfig", str(account)
                )
                wait(lambda: _target(cluster).startswith("rendered-worker-"), 60,
                     "worker rendered", ctl.log)  # fmt: skip
                # the Deployment's pod: the Secret mounted, the ServiceAccount's token
                secret = cluster.kube.request(
                    "GET", "/api/v1/namespaces/mcd/secrets/mcd-server-tls"
                )
                tls = tmp_path / "tls"
                tls.mkdir()
                for name in ("tls.crt", "tls.key"):
                    (tls / name).write_bytes(base64.b64decode(secret["data"][name]))
                sa = _token_kubeconfig(cluster, "mcd-server", tmp_path / "server.kubeconfig")
                with server_log.open("wb") as log:
                    server = subprocess.Popen(
                        [sys.executable, "-m", "mcd", *_server_args(port, tls, sa)],
                        stdout=log, stderr=subprocess.STDOUT, cwd=REPO,
                    )  # fmt: skip
                _wait_listening(port, server, server_log)
            elif line.startswith("mcd join-token create"):
                words = substituted(step)
                assert words[-2] == ">" and words[-1] == "worker-7.ign"
                user_data.write_text(shell.ok(words[:-2]))
            elif line.startswith("kubectl -n mcd logs deploy/mcd-server"):
                # the machine boots with worker-7.ign (the block's comment): Ignition fetches
                pointer = json.loads(user_data.read_text())
                status, body = _fetch(pointer, ca)
                assert status == 200, body[:200]
                served = json.loads(body)
                files_served = {f["path"]: f for f in served["storage"]["files"]}
                annotations = files_served["/etc/machine-config-daemon/node-annotations.json"]
                data = annotations["contents"]["source"]
                assert _target(cluster) in urllib_unquote(data)
                again, _ = _fetch(pointer, ca)
                assert again == 403  # a join token is used once
                assert step[-2:] == ["grep", "worker-7"]
                said = [ln for ln in server_log.read_text().splitlines() if "worker-7" in ln]
                assert any("Served" in ln and _target(cluster) in ln for ln in said), said
            else:
                raise AssertionError(f"a README command this test does not know: {line}")
    finally:
        if server is not None:
            server.terminate()
            try:
                server.wait(10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait(5)
        if ctl is not None:
            ctl.stop()
        with contextlib.suppress(ApiError):
            cluster.kube.request("DELETE", "/api/v1/namespaces/mcd/secrets/mcd-server-tls")
        for item in (
            cluster.kube.request("GET", "/api/v1/namespaces/mcd/secrets").get("items") or []
        ):
            if item["metadata"]["name"].startswith("mcd-join-"):
                with contextlib.suppress(ApiError):
                    cluster.kube.request(
                        "DELETE", f"/api/v1/namespaces/mcd/secrets/{item['metadata']['name']}"
                    )


def _wait_listening(port: int, proc: subprocess.Popen[bytes], log: Path) -> None:
    def up() -> bool:
        assert proc.poll() is None, log.read_text()
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
            return True
        return False

    wait(up, 30, "mcd server listening", log.read_text)


def urllib_unquote(source: str) -> str:
    """A data: URL's text (percent-encoded or base64)."""
    head, _, data = source.partition(",")
    return (
        base64.b64decode(data).decode() if head.endswith(";base64") else urllib.parse.unquote(data)
    )
