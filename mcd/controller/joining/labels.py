"""A node booted into a custom pool gets that pool's node labels (upstream
``isCustomPoolBootedNode`` and ``applyCustomPoolLabels``, ``pkg/controller/node/
node_controller.go``).

A node that joined with ``mcd server`` carries ``machineconfiguration.openshift.io/
firstPivotConfig`` from its node-annotations file, written by its agent's first sync. When
that rendered config is owned by a pool other than ``master`` and ``worker`` and the node
has no ``customPoolLabelsApplied`` annotation yet, the controller sets the labels the pool's
``nodeSelector`` asks for (``matchLabels``; an ``In`` with one value; ``Exists`` as an empty
value; a ``matchLabels`` key wins over an expression) and the annotation, in one write. It
does so at the start of each pass, before any pool is synced, so the node is in its pool
before a rollout could target it with ``worker``'s config. Upstream does it while choosing
a pool's candidates; the outcome a user sees is the same (the labels, the annotation, no
update); here a node already in its pool is not written at all.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from mcd.cluster.api import ApiError, Obj
from mcd.cluster.pools import NODES, PoolWriter, node_fields
from mcd.model.pool.hygiene import selector_problem
from mcd.model.pool.pools import MASTER, WORKER, name_of, selector_matches

log = logging.getLogger(__name__)

FIRST_PIVOT = "machineconfiguration.openshift.io/firstPivotConfig"
APPLIED = "machineconfiguration.openshift.io/customPoolLabelsApplied"
MERGE_PATCH = "application/merge-patch+json"


def custom_owner(config: Mapping[str, Any]) -> str:
    """The custom pool owning a rendered config (its first owner), or "" for ``master``,
    ``worker`` or none."""
    owners = (config.get("metadata") or {}).get("ownerReferences") or []
    pool = str(owners[0].get("name") or "") if owners else ""
    return "" if pool in (MASTER, WORKER) else pool


def booted_pool(node: Mapping[str, Any], owner_of: Callable[[str], str]) -> str:
    """The custom pool ``node`` booted into, or "" (upstream ``isCustomPoolBootedNode``);
    ``owner_of``: a rendered config's :func:`custom_owner` by name ("" when unknown)."""
    annotations = (node.get("metadata") or {}).get("annotations") or {}
    first = str(annotations.get(FIRST_PIVOT) or "")
    if APPLIED in annotations or not first:
        return ""
    return owner_of(first)


def pool_labels(pool: Mapping[str, Any]) -> dict[str, str]:
    """The labels a node needs to be selected by ``pool`` (upstream's derivation in
    ``applyCustomPoolLabels``); {} when its selector names none."""
    selector = (pool.get("spec") or {}).get("nodeSelector")
    if not isinstance(selector, Mapping) or selector_problem(selector):
        return {}
    labels = {str(k): str(v) for k, v in (selector.get("matchLabels") or {}).items()}
    for expr in selector.get("matchExpressions") or []:
        key, op, values = str(expr.get("key", "")), expr.get("operator"), expr.get("values") or []
        if op == "In" and len(values) == 1:
            labels.setdefault(key, str(values[0]))
        elif op == "In":
            log.info("MachineConfigPool %s matchExpression key %r has multiple values, "
                     "skipping", name_of(pool), key)  # fmt: skip
        elif op == "Exists":
            labels.setdefault(key, "")
    return labels


class CustomPoolLabels:
    """Labels the nodes booted into a custom pool; each written Node goes to ``observe``."""

    def __init__(self, writer: PoolWriter, observe: Callable[[Obj], None] | None = None) -> None:
        self.writer = writer
        self.observe = observe
        self._owners: dict[str, str] = {}

    def __call__(
        self, nodes: Iterable[Obj], pools: Iterable[Obj], configs: Callable[[str], Obj | None]
    ) -> list[str]:
        """The nodes labelled now (a failure is logged; the next pass tries again);
        ``configs``: a rendered config by name (the informer's cache)."""
        by_name: dict[str, Obj] | None = None
        done = []
        for node in nodes:
            pool_name = booted_pool(node, lambda name: self._owner(name, configs))
            if not pool_name:
                continue
            if by_name is None:
                by_name = {name_of(p): p for p in pools}
            pool = by_name.get(pool_name)
            if pool is not None and self._apply(node, pool):
                done.append(name_of(node))
        return done

    def _owner(self, name: str, configs: Callable[[str], Obj | None]) -> str:
        """A rendered config's custom owner, kept (a rendered config never changes; every
        node that joined through ``mcd server`` keeps its ``firstPivotConfig``)."""
        owner = self._owners.get(name)
        if owner is None:
            config = configs(name)
            if config is None:
                return ""
            owner = self._owners[name] = custom_owner(config)
        return owner

    def _apply(self, node: Obj, pool: Obj) -> bool:
        name, pool_name = name_of(node), name_of(pool)
        labels = pool_labels(pool)
        if not labels:
            log.info("MachineConfigPool %s has no applicable node selector labels", pool_name)
            return False
        have = (node.get("metadata") or {}).get("labels") or {}
        if selector_matches((pool.get("spec") or {}).get("nodeSelector"), have):
            return False  # in its pool already (labelled by its administrator)
        log.info("Node %s was booted into custom pool %s; applying node selector labels: %s",
                 name, pool_name, dict(sorted(labels.items())))  # fmt: skip
        patch = {"metadata": {"labels": labels, "annotations": {APPLIED: ""}}}
        try:
            written = self.writer.kube.request(
                "PATCH", f"{NODES}/{name}", body=patch, content_type=MERGE_PATCH
            )
        except ApiError as e:
            log.error("Failed to apply custom pool labels to node %s: %s", name, e)
            return False
        self.writer.writes += 1
        if self.observe is not None:
            self.observe(node_fields(written))
        log.info("Successfully applied custom pool labels to node %s", name)
        return True
