"""What a pool serves, read from watch caches (upstream ``NewClusterServer``: listers of
pools, MachineConfigs, the ControllerConfig and ConfigMaps, synced before the server
serves): a request costs no API read.

* Pools and MachineConfigs: every one, each kept by a list and a watch
  (:class:`mcd.cluster.informer.Informer`). A pool naming a rendered config the cache does
  not hold yet (its watch event not in yet) reads that config with one GET.
* The kubelet CA: the ControllerConfig ``machine-config-controller`` and the ConfigMap
  ``kube-root-ca.crt``, each watched by name (a field selector, which RBAC's
  ``resourceNames`` allows). One the server may not read, or whose kind the cluster does
  not have (plain Kubernetes: no ControllerConfig), is left out at start, as the GETs
  before treated a 403 or 404.
* Join-token Secrets: the labelled ones of the token namespace (either label domain). A
  token id the cache does not hold (issued a moment ago) is read with one GET; the
  Secret's deletion (``join-token revoke``) leaves the cache with its watch event, and a
  deleted token is never served either way: each use is recorded by an update conditional
  on the resourceVersion judged, which a deleted Secret fails (404: refused). Without
  list and watch on Secrets there (RBAC from before), every token is read with a GET.

:meth:`CachedSource.start` returns once every cache has synced; the server opens its
ports only then.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable

from mcd.cluster.api import ApiError, Kube, Obj
from mcd.cluster.configs import MACHINECONFIGS
from mcd.cluster.informer import Informer
from mcd.cluster.watch import Backoff
from mcd.server.source import (
    CONTROLLERCONFIG,
    POOLS,
    ClusterSource,
    PoolConfig,
    PoolNotFound,
    served_name,
)
from mcd.server.tokens import LABELS, secret_name

log = logging.getLogger(__name__)

CONTROLLER = CONTROLLERCONFIG.rsplit("/", 1)[1]
CONTROLLERCONFIGS = CONTROLLERCONFIG.rsplit("/", 1)[0]
ROOT_CA = "kube-root-ca.crt"
WAIT_LOG = 30.0
"""Seconds between the log lines of a sync that takes long."""


def _by_name(name: str) -> dict[str, str]:
    return {"fieldSelector": f"metadata.name={name}"}


class CachedSource(ClusterSource):
    def __init__(
        self,
        kube: Kube,
        namespace: str,
        apiserver_url: str = "",
        bootstrap_token_dir: str = "",
        token_namespace: str = "",
    ) -> None:
        super().__init__(kube, namespace, apiserver_url, bootstrap_token_dir)
        self.pools = Informer(kube, POOLS, copies=False)
        self.configs = Informer(kube, MACHINECONFIGS, copies=False)
        self.controller: Informer | None = Informer(
            kube, CONTROLLERCONFIGS, copies=False, selector=_by_name(CONTROLLER)
        )
        configmaps = f"/api/v1/namespaces/{namespace}/configmaps"
        self.root_ca: Informer | None = Informer(
            kube, configmaps, copies=False, selector=_by_name(ROOT_CA)
        )
        secrets = f"/api/v1/namespaces/{token_namespace}/secrets"
        self.tokens: list[Informer] = [
            Informer(kube, secrets, copies=False, selector={"labelSelector": f"{label}=true"})
            for label in (LABELS if token_namespace else ())
        ]
        self._threads: list[threading.Thread] = []

    def _informers(self) -> Iterable[Informer]:
        yield self.pools
        yield self.configs
        yield from (i for i in (self.controller, self.root_ca) if i is not None)
        yield from self.tokens

    def _readable(self, informer: Informer, stop: threading.Event) -> bool:
        """Whether the server may list what ``informer`` caches (False: 403 or 404)."""
        backoff = Backoff()
        while not stop.is_set():
            try:
                self.kube.request("GET", informer.path, {**informer.selector, "limit": 1})
                return True
            except ApiError as e:
                if e.status in (403, 404):
                    return False
                delay = backoff.next()
                log.warning("Listing %s failed (%s); retrying in %.1fs", informer.path, e, delay)
                stop.wait(delay)
        return False

    def start(self, stop: threading.Event) -> bool:
        """Start the caches and wait until each has synced (False: stopped first)."""
        if self.controller is not None and not self._readable(self.controller, stop):
            log.info("No ControllerConfig %s to read: the kubelet CA is %s", CONTROLLER, ROOT_CA)
            self.controller = None
        if self.root_ca is not None and not self._readable(self.root_ca, stop):
            log.info("ConfigMap %s/%s not readable: no kubelet CA", self.namespace, ROOT_CA)
            self.root_ca = None
        if self.tokens and not self._readable(self.tokens[0], stop):
            log.warning("Join-token Secrets cannot be watched: each token is read with a GET")
            self.tokens = []
        for informer in self._informers():
            thread = threading.Thread(
                target=informer.run, args=(stop,), name=f"cache {informer.path}", daemon=True
            )
            thread.start()
            self._threads.append(thread)
        for informer in self._informers():
            waited = 0.0
            while not informer.synced.wait(1.0):
                if stop.is_set():
                    return False
                waited += 1.0
                if waited % WAIT_LOG == 0:
                    log.warning("Waiting for the cache of %s to sync", informer.path)
        log.info(
            "Caches synced: %d pools, %d MachineConfigs, %d join tokens",
            len(self.pools.items()), len(self.configs.items()),
            sum(len(i.items()) for i in self.tokens),
        )  # fmt: skip
        return True

    def pool_config(self, pool_name: str) -> PoolConfig:
        pool = self.pools.get(pool_name)
        if pool is None:
            raise PoolNotFound(pool_name)
        name = served_name(pool)
        if not name:
            raise LookupError(f"pool {pool_name} has no configuration yet")
        config = self.configs.get(name)
        if config is None:  # the pool's watch event came before the config's
            config = self.kube.request("GET", f"{MACHINECONFIGS}/{name}")
        return PoolConfig(name, config)

    def _kubelet_ca(self) -> bytes:
        if self.controller is not None:
            cc = self.controller.get(CONTROLLER)
            if cc is not None:
                return self._controller_ca(cc)
        cm = self.root_ca.get(ROOT_CA) if self.root_ca is not None else None
        return self._configmap_ca(cm) if cm is not None else b""

    def token_secret(self, token_id: str) -> Obj | None:
        """A token's Secret as the cache holds it; None when not held (or not watched)."""
        for informer in self.tokens:
            found = informer.get(secret_name(token_id))
            if found is not None:
                return found
        return None
