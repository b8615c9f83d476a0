"""Real-cluster mode: with ``MCD_TEST_KUBECONFIG`` naming a real cluster (an admin's
kubeconfig), the test session installs what the suites need from ``daemonset/`` and removes
what it installed at the end.

* The Namespace, the MachineConfig and MachineConfigNode CRDs (waited for until Established and
  served) and the RBAC
  (ServiceAccount ``mcd``, the shipped ClusterRole and its binding) are applied with the real
  ``kubectl``; objects that were already there are left as they were.
* The e2e agents talk to the cluster with a token of that ServiceAccount (TokenRequest API), in
  a kubeconfig named by ``MCD_TEST_AGENT_KUBECONFIG``: every request they make is authorised by
  the shipped ClusterRole on the real authorizer, not by an admin's rights.
* With ``MCD_TEST_FAKE_KUBELET`` naming ``fake-kubelet.py`` (``shared/realcluster``), it runs
  for the session over the test Nodes (label ``mcd-test=true``): they are Ready, their pods
  run, evicted pods finish. It is stopped by its pid.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from mcd.cluster.api import ApiError, Kube, load_client
from tests.real.cache import cache_dir, locked

REPO = Path(__file__).resolve().parents[2]
INSTALL = [
    "base/00-namespace.yaml", "kubernetes/01-machineconfig-crd.yaml", "base/02-rbac.yaml",
    "optional/self-drain-rbac.yaml", "kubernetes/08-machineconfignode-crd.yaml",
]  # fmt: skip
"""What a session installs; the e2e agents drain by themselves (``--drain-mode self``, the
harness's default) with the opt-in self-drain role, as an admin who chose that mode would."""
CRDS = {
    "machineconfigs.machineconfiguration.openshift.io": "machineconfigs",
    "machineconfignodes.machineconfiguration.openshift.io": "machineconfignodes",
}
"""The CRDs installed, and the resource each serves (waited for until it is served)."""
AGENT_KUBECONFIG_ENV = "MCD_TEST_AGENT_KUBECONFIG"
TOKEN_SECONDS = 4 * 3600

Obj = dict[str, Any]


def _path_of(doc: Obj) -> str:
    """The API path of a manifest's object (the kinds ``daemonset/`` installs)."""
    kind, name = doc["kind"], doc["metadata"]["name"]
    ns = doc["metadata"].get("namespace")
    plural = {"Namespace": "namespaces", "CustomResourceDefinition": "customresourcedefinitions",
              "ServiceAccount": "serviceaccounts", "ClusterRole": "clusterroles",
              "ClusterRoleBinding": "clusterrolebindings", "Role": "roles",
              "RoleBinding": "rolebindings"}[kind]  # fmt: skip
    version = doc["apiVersion"]
    base = f"/api/{version}" if "/" not in version else f"/apis/{version}"
    return f"{base}/namespaces/{ns}/{plural}/{name}" if ns else f"{base}/{plural}/{name}"


class RealClusterSession:
    def __init__(self, kubeconfig: Path, workdir: Path) -> None:
        self.kubeconfig = kubeconfig
        self.workdir = workdir
        self.kube = Kube(load_client(str(kubeconfig)))
        self.created: list[str] = []
        self.kubelet: subprocess.Popen[bytes] | None = None
        self.agent_kubeconfig = workdir / "agent.kubeconfig"

    def kubectl(self, *args: str) -> str:
        binary = shutil.which("kubectl")
        if binary is None:
            raise RuntimeError("kubectl is not installed: run scripts/setup.sh")
        result = subprocess.run(
            [binary, f"--kubeconfig={self.kubeconfig}", f"--cache-dir={self.workdir / 'kc'}", *args],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        if result.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)}: {result.stderr.strip()}")
        return result.stdout

    def _exists(self, path: str, timeout: float = 180.0) -> bool:
        """Whether the object is there; one being deleted (a namespace terminating after the
        last session) is waited for until it is gone."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                obj = self.kube.request("GET", path)
            except ApiError as e:
                if e.status == 404:
                    return False
                raise
            if not obj["metadata"].get("deletionTimestamp"):
                return True
            if time.monotonic() > deadline:
                raise RuntimeError(f"{path} still being deleted after {timeout}s")
            time.sleep(0.5)

    def install(self) -> None:
        files = [REPO / "daemonset" / name for name in INSTALL]
        for f in files:
            for doc in (d for d in yaml.safe_load_all(f.read_text()) if d):
                if not self._exists(_path_of(doc)):
                    self.created.append(_path_of(doc))
        self.kubectl("apply", *(arg for f in files for arg in ("-f", str(f))))
        self._wait_served()
        self._agent_credentials()
        self._start_kubelet()

    def _wait_served(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        for crd_name, plural in CRDS.items():
            while True:
                crd = self.kube.request(
                    "GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd_name}"
                )
                conditions = {
                    c["type"]: c["status"] for c in crd.get("status", {}).get("conditions", [])
                }
                if conditions.get("Established") == "True":
                    with contextlib.suppress(ApiError):
                        self.kube.request(
                            "GET", f"/apis/machineconfiguration.openshift.io/v1/{plural}"
                        )
                        break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"CRD {crd_name} not served after {timeout}s: {conditions}")
                time.sleep(0.2)

    def _agent_credentials(self) -> None:
        """A kubeconfig with a token of ServiceAccount mcd/mcd, for the agents."""
        sa = next(
            d for d in yaml.safe_load_all((REPO / "daemonset/base/02-rbac.yaml").read_text())
            if d and d["kind"] == "ServiceAccount"
        )  # fmt: skip
        ns, name = sa["metadata"]["namespace"], sa["metadata"]["name"]
        review = self.kube.request(
            "POST", f"/api/v1/namespaces/{ns}/serviceaccounts/{name}/token",
            body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                  "spec": {"expirationSeconds": TOKEN_SECONDS}},
        )  # fmt: skip
        admin = yaml.safe_load(self.kubeconfig.read_text())
        context = next(c for c in admin["contexts"] if c["name"] == admin["current-context"])
        cluster = next(c for c in admin["clusters"] if c["name"] == context["context"]["cluster"])
        self.agent_kubeconfig.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "clusters": [cluster],
            "users": [{"name": f"system:serviceaccount:{ns}:{name}",
                       "user": {"token": review["status"]["token"]}}],
            "contexts": [{"name": "agent", "context": {"cluster": cluster["name"],
                                                       "user": f"system:serviceaccount:{ns}:{name}"}}],
            "current-context": "agent",
        }))  # fmt: skip
        self.agent_kubeconfig.chmod(0o600)
        os.environ[AGENT_KUBECONFIG_ENV] = str(self.agent_kubeconfig)

    def _start_kubelet(self) -> None:
        script = os.environ.get("MCD_TEST_FAKE_KUBELET")
        if not script:
            return
        log = (self.workdir / "fake-kubelet.log").open("wb")
        self.kubelet = subprocess.Popen(
            [sys.executable, script, f"--kubeconfig={self.kubeconfig}", "-l", "mcd-test=true"],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        log.close()

    def close(self, uninstall: bool = True) -> None:
        os.environ.pop(AGENT_KUBECONFIG_ENV, None)
        if self.kubelet is not None:
            self.kubelet.send_signal(signal.SIGTERM)
            try:
                self.kubelet.wait(10)
            except subprocess.TimeoutExpired:
                self.kubelet.kill()
                self.kubelet.wait(5)
        if not uninstall:
            return
        for path in reversed(self.created):
            with contextlib.suppress(ApiError):
                self.kube.request("DELETE", path)
        for path in self.created:  # leave the cluster as it was found, not half-deleted
            with contextlib.suppress(ApiError, RuntimeError):
                self._exists(path, timeout=60.0)


# -- a throw-away cluster per test process (MCD_TEST_REAL_CLUSTERS) ----------------------------

REAL_CLUSTERS_ENV = "MCD_TEST_REAL_CLUSTERS"
KIT_ENV = "MCD_TEST_REALCLUSTER_KIT"
KIT = REPO.parent / "shared" / "realcluster"

_WATCHDOG = r"""
import os, signal, subprocess, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)
stop_sh, kas_dir = sys.argv[1], sys.argv[2]
guarded = []
for line in sys.stdin:  # until EOF: the test process ended, in any way
    pid, _, marker = line.strip().partition(" ")
    guarded.append((int(pid), marker))
for pid, marker in guarded:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            if marker.encode() in f.read():
                os.kill(pid, signal.SIGTERM)
    except OSError:
        pass
if os.path.isdir(kas_dir):
    subprocess.run(["bash", stop_sh, kas_dir, "--purge"], stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
"""


def kit_dir() -> Path:
    return Path(os.environ.get(KIT_ENV) or KIT).resolve()


def kit_missing() -> str | None:
    """Why no throw-away cluster can start here, or None when the kit is there."""
    kit = kit_dir()
    for name in ("build.sh", "start.sh", "stop.sh", "fake-kubelet.py"):
        if not (kit / name).is_file():
            return f"no real-cluster kit at {kit} (no {name})"
    return None


def kas_home() -> Path:
    """Where the kit's binaries are unpacked: ``$MCD_KAS_HOME`` as the kit reads it, else
    ``kas/`` in the test cache (beside the real parts' rootfs and image)."""
    explicit = os.environ.get("MCD_KAS_HOME")
    if explicit:
        return Path(explicit)
    return cache_dir() / "kas"


def ensure_binaries() -> None:
    """Unpack the kit's bundled binaries once (its ``build.sh`` is idempotent), under a lock so
    that concurrent test processes wait for one unpack."""
    home = kas_home()
    home.mkdir(parents=True, exist_ok=True)
    with locked("kas-build"):
        result = subprocess.run(
            ["bash", str(kit_dir() / "build.sh"), "--no-kubectl"],
            env={**os.environ, "MCD_KAS_HOME": str(home)},
            capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False,
        )  # fmt: skip
    if result.returncode != 0:
        raise RuntimeError(f"{kit_dir()}/build.sh failed ({result.returncode}): {result.stderr}")


class ThrowAwayCluster:
    """etcd, kube-apiserver and kube-controller-manager on 127.0.0.1 for one test process,
    started by the kit's ``start.sh`` in ``kas_dir`` and stopped by its ``stop.sh`` (each
    process by the pid it recorded). A watchdog stops them too should the test process die
    without its session end (SIGKILL): it waits for the end of a pipe only this process holds."""

    def __init__(self, kas_dir: Path, kcm: bool = True) -> None:
        self.kas_dir = kas_dir
        self.kcm = kcm  # False: no kube-controller-manager (nodes no kubelet renews stay Ready)
        self.env: dict[str, str] = {}
        self._watchdog: subprocess.Popen[str] | None = None

    @property
    def kubeconfig(self) -> Path:
        return Path(self.env["KUBECONFIG"])

    def start(self) -> ThrowAwayCluster:
        kit = kit_dir()
        self.kas_dir.mkdir(parents=True, exist_ok=True)
        self._watchdog = subprocess.Popen(
            [sys.executable, "-c", _WATCHDOG, str(kit / "stop.sh"), str(self.kas_dir)],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            text=True, start_new_session=True,
        )  # fmt: skip
        env = {**os.environ, "MCD_KAS_HOME": str(kas_home()), "KAS_DIR": str(self.kas_dir),
               "KAS_KCM": "1" if self.kcm else "0"}  # fmt: skip
        env.pop("KUBECONFIG", None)
        result = subprocess.run(
            ["bash", str(kit / "start.sh")], env=env, capture_output=True, text=True,
            stdin=subprocess.DEVNULL, check=False,
        )  # fmt: skip
        if result.returncode != 0:
            self.stop()
            raise RuntimeError(f"{kit}/start.sh failed ({result.returncode}): {result.stderr}")
        for line in result.stdout.splitlines():
            key, sep, value = line.removeprefix("export ").partition("=")
            if sep:
                self.env[key] = value
        return self

    def guard(self, pid: int, marker: str) -> None:
        """Have the watchdog also stop ``pid`` (while its command line still holds ``marker``)."""
        if self._watchdog is not None and self._watchdog.stdin is not None:
            self._watchdog.stdin.write(f"{pid} {marker}\n")
            self._watchdog.stdin.flush()

    def stop(self) -> None:
        result = subprocess.run(
            ["bash", str(kit_dir() / "stop.sh"), str(self.kas_dir), "--purge"],
            capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False,
        )  # fmt: skip
        if self._watchdog is not None:
            if self._watchdog.stdin is not None:
                self._watchdog.stdin.close()  # EOF: it finds nothing left to stop
            self._watchdog.wait(60)
            self._watchdog = None
        if result.returncode != 0 and self.kas_dir.exists():
            raise RuntimeError(f"stop.sh {self.kas_dir}: {result.stderr}")


def inotify_instances() -> tuple[int, int]:
    """Inotify instances this user holds (every process of the user: other test runs too)
    and the limit (``fs.inotify.max_user_instances``). Each cluster takes 5 (its
    certificate watches), each real systemd container about 10, each agent 2; at the limit an
    agent's drift monitor or journal reader fails with EMFILE ("Too many open files")."""
    used = 0
    uid = os.getuid()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if proc.stat().st_uid != uid:
                continue
            for fd in (proc / "fd").iterdir():
                with contextlib.suppress(OSError):
                    if os.readlink(fd) == "anon_inode:inotify":
                        used += 1
        except OSError:
            continue
    limit = int(Path("/proc/sys/fs/inotify/max_user_instances").read_text())
    return used, limit


CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def install_crd(kube: Kube, doc: dict[str, Any], served: str, timeout: float = 180.0) -> None:
    """A CRD as ``doc`` says (created, or replacing an older copy), Established and ``served``
    answering. A copy still being deleted by an earlier test is waited for until it is gone
    first: applied onto a terminating CRD, the new one would never be Established."""
    path = f"{CRD_PATH}/{doc['metadata']['name']}"
    deadline = time.monotonic() + timeout
    while True:
        try:
            found = kube.request("GET", path)
        except ApiError as e:
            if e.status != 404:
                raise
            found = None
        if found is None or not found["metadata"].get("deletionTimestamp"):
            break
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"CRD {doc['metadata']['name']} still being deleted after {timeout}s"
            )
        time.sleep(0.5)
    body = {**doc, "metadata": dict(doc["metadata"])}
    if found is None:
        kube.request("POST", CRD_PATH, body=body)
    else:
        body["metadata"]["resourceVersion"] = found["metadata"]["resourceVersion"]
        kube.request("PUT", path, body=body)
    conditions: dict[str, str] = {}
    while time.monotonic() < deadline:
        crd = kube.request("GET", path)
        conditions = {
            c["type"]: c["status"] for c in (crd.get("status") or {}).get("conditions") or []
        }
        if conditions.get("Established") == "True":
            with contextlib.suppress(ApiError):
                kube.request("GET", served)
                return
        time.sleep(0.2)
    raise RuntimeError(f"CRD {doc['metadata']['name']} not served after {timeout}s: {conditions}")
