"""A cluster for tests: the fake API server, or a real one named by ``MCD_TEST_KUBECONFIG``.

Setup goes through the official client only, as a controller would, so the
same test runs against both. Every object a test creates is deleted after it;
Nodes carry the label ``mcd-test=true``.
"""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcd.cluster.api import ApiError, Kube, load_client
from mcd.cluster.policies import MACHINECONFIGURATION
from tests.fakes.apiserver import FakeApiServer
from tests.fakes.realcluster import AGENT_KUBECONFIG_ENV
from tests.fakes.tls import serving_context
from tests.patience import patient

Obj = dict[str, Any]
TEST_LABEL = {"mcd-test": "true"}
TEST_USER_AGENT = "mcd-tests"

KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- name: fake
  cluster: {{server: "{url}"{ca}}}
users:
- name: test
  user: {{token: test-token}}
contexts:
- name: fake
  context: {{cluster: fake, user: test}}
current-context: fake
"""


def write_kubeconfig(path: Path, url: str, ca: Path | None = None) -> Path:
    path.write_text(KUBECONFIG.format(url=url, ca=f', certificate-authority: "{ca}"' if ca else ""))
    return path


KUBERNETES_RECORDERS = {"node-controller", "kubelet", "cloud-node-controller"}
"""Kubernetes' own components that record Events about Nodes."""


class TestCluster:
    __test__ = False

    def __init__(self, workdir: Path, tls: bool = False) -> None:
        """``tls``: the fake server speaks HTTPS with a certificate in ``ca`` (an agent on
        its service account, as in the DaemonSet, speaks nothing else)."""
        real = os.environ.get("MCD_TEST_KUBECONFIG")
        self.fake: FakeApiServer | None = None
        self.ca: Path | None = None
        if real:
            self.kubeconfig = Path(real)
        else:
            context = None
            if tls:
                self.ca, context = serving_context(workdir / "pki")
            self.fake = FakeApiServer(tls=context).start()
            self.kubeconfig = write_kubeconfig(workdir / "kubeconfig", self.fake.url, self.ca)
        # what the agents use: on a real cluster, a token of the ServiceAccount in daemonset/
        agent = os.environ.get(AGENT_KUBECONFIG_ENV) if real else None
        self.agent_kubeconfig = Path(agent) if agent else self.kubeconfig
        # an agent with that token runs as the DaemonSet does: POD_NAMESPACE=mcd (its leases)
        self.pod_namespace = "mcd" if agent else None
        self.kube = Kube(load_client(str(self.kubeconfig)))
        self.kube.api.user_agent = TEST_USER_AGENT  # tell the tests' requests from the agent's
        self.suffix = uuid.uuid4().hex[:6]
        self._cleanup: list[tuple[str, str]] = []

    def name(self, base: str) -> str:
        return f"{base}-{self.suffix}"

    # -- setup through the API ----------------------------------------------------------

    def create(self, path: str, obj: Obj, item_path: str | None = None) -> Obj:
        created = self.kube.request("POST", path, body=obj)
        self._cleanup.append(("DELETE", item_path or f"{path}/{created['metadata']['name']}"))
        return created

    def node(self, base: str = "node", annotations: dict[str, str] | None = None) -> str:
        name = self.name(base)
        self.create("/api/v1/nodes", {
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": dict(TEST_LABEL), "annotations": annotations or {}},
        })  # fmt: skip
        return name

    def namespace(self, base: str = "ns") -> str:
        name = self.name(base)
        self.create(
            "/api/v1/namespaces",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
        )
        return name

    def pod(
        self,
        namespace: str,
        name: str,
        node: str,
        labels: dict[str, str] | None = None,
        **meta: Any,
    ) -> Obj:
        return self.create(f"/api/v1/namespaces/{namespace}/pods", {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": labels or {}, **meta},
            "spec": {"nodeName": node, "terminationGracePeriodSeconds": 1,
                     "tolerations": [{"operator": "Exists"}],
                     "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9"}]},
        })  # fmt: skip

    def pdb(self, namespace: str, name: str, selector: dict[str, str], min_available: int) -> Obj:
        return self.create(f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets", {
            "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": name},
            "spec": {"minAvailable": min_available, "selector": {"matchLabels": selector}},
        })  # fmt: skip

    def budget_in_force(self, namespace: str, pdb: str) -> bool:
        """The budget's status is computed for its current spec and it allows no disruption.

        A real cluster needs a moment for that: the kubelet reports the pods Running and Ready,
        then the disruption controller counts them (until then the pods are evictable)."""
        got = self.kube.request(
            "GET", f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets/{pdb}"
        )
        status = got.get("status") or {}
        return (
            status.get("observedGeneration") == got["metadata"].get("generation")
            and status.get("currentHealthy", 0) >= 1
            and status.get("disruptionsAllowed") == 0
        )

    def set_min_available(self, namespace: str, pdb: str, value: int) -> None:
        """Loosen or tighten a budget, as an admin would to release a blocked drain."""
        self.kube.request(
            "PATCH", f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets/{pdb}",
            body={"spec": {"minAvailable": value}}, content_type="application/merge-patch+json",
        )  # fmt: skip

    def annotate(self, node: str, values: dict[str, str | None]) -> Obj:
        return self.kube.request(
            "PATCH", f"/api/v1/nodes/{node}", body={"metadata": {"annotations": values}},
            content_type="application/merge-patch+json",
        )  # fmt: skip

    def get_node(self, node: str) -> Obj:
        return self.kube.request("GET", f"/api/v1/nodes/{node}")

    def pods_on(self, node: str) -> list[str]:
        listing = self.kube.request(
            "GET", "/api/v1/pods", {"fieldSelector": f"spec.nodeName={node}"}
        )
        return sorted(p["metadata"]["name"] for p in listing["items"])

    def events_for(self, node: str, namespace: str | None = None) -> list[Obj]:
        """The Events about ``node`` that mcd recorded: in ``namespace``, else in every
        namespace (the agent records in its own, ``OSUpdateStaged`` in default). A real
        cluster's kube-controller-manager records its own about a new Node
        (``RegisteredNode``, whenever its node controller gets to it): left out."""
        where = f"/api/v1/namespaces/{namespace}/events" if namespace else "/api/v1/events"
        listing = self.kube.request("GET", where)
        return [
            e
            for e in listing["items"]
            if e.get("involvedObject", {}).get("name") == node
            and (e.get("source") or {}).get("component") not in KUBERNETES_RECORDERS
        ]

    def close(self) -> None:
        for method, path in reversed(self._cleanup):
            with contextlib.suppress(ApiError):
                self.kube.request(method, path, {"gracePeriodSeconds": 0})
        if self.fake is None:  # a controller creates it (as upstream's operator): per test
            with contextlib.suppress(ApiError):
                self.kube.request("DELETE", MACHINECONFIGURATION)
        if self.fake is not None:
            self.fake.stop()


def eventually(check: Callable[[], bool], timeout: float = 10.0, interval: float = 0.05) -> bool:
    deadline = time.monotonic() + patient(timeout)
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(interval)
    return check()
