"""What a pool serves: its rendered config, the kubelet CA and a bootstrap kubeconfig
(upstream ``clusterServer.GetConfig``; the document itself is built by the pure
:mod:`mcd.model.ignition.served`).

* The config: the pool's ``spec.configuration`` once ``status.updatedMachineCount > 0``,
  else ``status.configuration`` (a new node gets the new config only once one node took it;
  a config that breaks nodes is not handed to new ones).
* The kubelet CA: ``spec.kubeAPIServerServingCAData`` of the ControllerConfig
  ``machine-config-controller`` (OpenShift); on plain Kubernetes, which has no
  ControllerConfig, ``ca.crt`` of the ConfigMap ``kube-root-ca.crt`` in the server's
  namespace (the CA the cluster's service accounts trust for the API server).
* The kubeconfig: upstream builds it from the node-bootstrapper token mounted at
  ``/etc/mcs/bootstrap-token`` and ``--apiserver-url``; mcd does the same from
  ``--bootstrap-token-dir`` (files ``token`` and ``ca.crt``, e.g. a kubeadm bootstrap
  token Secret) when given, and serves no kubeconfig otherwise.
"""

from __future__ import annotations

import base64
import json
import logging
import os
from dataclasses import dataclass
from typing import Any

from mcd.cluster.api import ApiError, Kube, Obj
from mcd.cluster.configs import MACHINECONFIGS
from mcd.model.ignition.served import Extras

log = logging.getLogger(__name__)

POOLS = "/apis/machineconfiguration.openshift.io/v1/machineconfigpools"
CONTROLLERCONFIG = (
    "/apis/machineconfiguration.openshift.io/v1/controllerconfigs/machine-config-controller"
)


class PoolNotFound(Exception):
    pass


@dataclass(frozen=True)
class PoolConfig:
    name: str
    machine_config: Obj


def served_name(pool: Obj) -> str:
    """Upstream: ``spec.configuration`` once a node has updated, else ``status.configuration``."""
    spec = (pool.get("spec") or {}).get("configuration") or {}
    status = pool.get("status") or {}
    if int(status.get("updatedMachineCount") or 0) > 0:
        return str(spec.get("name") or "")
    return str((status.get("configuration") or {}).get("name") or "")


def kubeconfig_yaml(server: str, ca: bytes, token: str) -> bytes:
    """A kubeconfig as upstream's ``kubeconfigFromSecret`` writes it (JSON is YAML)."""
    doc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "local",
                "cluster": {
                    "server": server,
                    "certificate-authority-data": base64.b64encode(ca).decode(),
                },
            }
        ],
        "users": [{"name": "kubelet", "user": {"token": token}}],
        "contexts": [{"name": "kubelet", "context": {"cluster": "local", "user": "kubelet"}}],
        "current-context": "kubelet",
        "preferences": {},
    }
    return json.dumps(doc, indent=2).encode()


class ClusterSource:
    """Reads through the API server on every request (a few small GETs); ``mcd server``
    reads watch caches instead (:class:`mcd.server.caches.CachedSource`)."""

    def __init__(
        self,
        kube: Kube,
        namespace: str,
        apiserver_url: str = "",
        bootstrap_token_dir: str = "",
    ) -> None:
        self.kube = kube
        self.namespace = namespace
        self.apiserver_url = apiserver_url
        self.bootstrap_token_dir = bootstrap_token_dir

    def pool_config(self, pool_name: str) -> PoolConfig:
        try:
            pool = self.kube.request("GET", f"{POOLS}/{pool_name}")
        except ApiError as e:
            if e.status == 404:
                raise PoolNotFound(pool_name) from None
            raise
        name = served_name(pool)
        if not name:
            raise LookupError(f"pool {pool_name} has no configuration yet")
        return PoolConfig(name, self.kube.request("GET", f"{MACHINECONFIGS}/{name}"))

    def extras(self) -> Extras:
        return Extras(kubelet_ca=self._kubelet_ca(), kubeconfig=self._kubeconfig())

    def _kubelet_ca(self) -> bytes:
        try:
            return self._controller_ca(self.kube.request("GET", CONTROLLERCONFIG))
        except ApiError as e:
            if e.status not in (403, 404):
                raise
        try:
            cm = self.kube.request(
                "GET", f"/api/v1/namespaces/{self.namespace}/configmaps/kube-root-ca.crt"
            )
        except ApiError as e:
            if e.status in (403, 404):
                return b""
            raise
        return self._configmap_ca(cm)

    @staticmethod
    def _controller_ca(cc: Obj) -> bytes:
        data = (cc.get("spec") or {}).get("kubeAPIServerServingCAData") or ""
        return base64.b64decode(data) if data else b""

    @staticmethod
    def _configmap_ca(cm: Obj) -> bytes:
        return str((cm.get("data") or {}).get("ca.crt") or "").encode()

    def _kubeconfig(self) -> bytes:
        if not self.bootstrap_token_dir or not self.apiserver_url:
            return b""
        with open(os.path.join(self.bootstrap_token_dir, "token"), "rb") as f:
            token = f.read(64 * 1024).decode().strip()
        with open(os.path.join(self.bootstrap_token_dir, "ca.crt"), "rb") as f:
            ca = f.read(1 << 20)
        return kubeconfig_yaml(self.apiserver_url, ca, token)
