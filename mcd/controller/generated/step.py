"""One pass of the generating controllers over the informers' caches (upstream
``syncKubeletConfig`` / ``syncContainerRuntimeConfig`` and their ``cascadeDelete``).

For each object, by creation time (oldest first: the suffixes follow creation, as upstream):

- being deleted (``deletionTimestamp``): the MachineConfigs its finalizers name are deleted,
  then those finalizers are removed (the API server then lets the object go);
- refused by the checks (:mod:`mcd.model.generated`): a failure condition naming the field, and
  its MachineConfigs are kept as they are (the nodes stay on what was accepted);
- else, per pool it selects: its ``mc-name-suffix`` annotation, the generated MachineConfig
  created or replaced when it differs, its name added to the object's finalizers; then the
  success condition.

A generated MachineConfig whose owner is gone (deleted while no controller ran), or that an
accepted owner no longer generates (its selector dropped the pool), is deleted: the pools
render without it and roll back. A pass whose inputs (the objects, the pools' names and
labels, the generated MachineConfigs) are those of the last one that ended cleanly does
nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from mcd.cluster.api import MERGE_PATCH, ApiError, Kube, Obj
from mcd.cluster.configs import MACHINECONFIGS
from mcd.model.generated import kubelet, runtime
from mcd.model.generated.objects import (
    SUFFIX_ANNOTATION,
    GeneratedFile,
    GenerateError,
    machine_config,
    managed_key,
    owned_by,
    selected_pools,
    suffix_of,
)
from mcd.model.generated.status import kubelet_status, runtime_status
from mcd.model.pool.pools import labels_of, name_of

log = logging.getLogger(__name__)

GROUP = "/apis/machineconfiguration.openshift.io/v1"
KUBELETCONFIGS = f"{GROUP}/kubeletconfigs"
CONTAINERRUNTIMECONFIGS = f"{GROUP}/containerruntimeconfigs"


def _no_pool_check(_obj: Mapping[str, Any], _pool: Mapping[str, Any]) -> None:
    return None


@dataclass(frozen=True)
class Kind:
    kind: str
    path: str
    word: str
    """``kubelet`` / ``containerruntime``: the generated names' last word."""
    validate: Callable[[Mapping[str, Any]], None]
    files: Callable[[Mapping[str, Any]], list[GeneratedFile]]
    status: Callable[[Mapping[str, Any], str | None, str], Obj | None]
    no_pool: str
    pool_check: Callable[[Mapping[str, Any], Mapping[str, Any]], None] = _no_pool_check


KUBELET = Kind("KubeletConfig", KUBELETCONFIGS, "kubelet", kubelet.validate, kubelet.files,
               kubelet_status, "could not find any MachineConfigPool set for KubeletConfig",
               kubelet.validate_for_pool)  # fmt: skip
RUNTIME = Kind("ContainerRuntimeConfig", CONTAINERRUNTIMECONFIGS, "containerruntime",
               runtime.validate, runtime.files, runtime_status,
               "could not find any MachineConfigPool set for ContainerRuntimeConfig")  # fmt: skip
KINDS = (KUBELET, RUNTIME)


def _meta(obj: Mapping[str, Any]) -> dict[str, Any]:
    return dict(obj.get("metadata") or {})


def _generated(name: str, kind: Kind) -> bool:
    return f"-generated-{kind.word}" in name and name.startswith("99-")


def _named(items: Sequence[Obj], name: str) -> Obj:
    """The newest copy of the object ``name`` (the pass replaces what it patched)."""
    return next(o for o in items if name_of(o) == name)


def _same(have: Mapping[str, Any], want: Mapping[str, Any]) -> bool:
    a, b = _meta(have), _meta(want)
    return (have.get("spec") or {}) == want["spec"] and all(
        (a.get(k) or {}) == b[k] for k in ("labels", "annotations")
    ) and [(r.get("kind"), r.get("uid")) for r in a.get("ownerReferences") or []] == [
        (r["kind"], r["uid"]) for r in b["ownerReferences"]]  # fmt: skip


@dataclass
class GeneratedStep:
    kube: Kube
    version: str
    observe_config: Callable[[Obj], None] = field(default=lambda _o: None)
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    _last: dict[str, Any] = field(default_factory=dict)

    def __call__(
        self, objects: Mapping[str, Sequence[Obj]], pools: Sequence[Obj], configs: Mapping[str, Obj]
    ) -> None:
        """One pass; ``objects`` by kind name (a kind whose cache has not synced is absent)."""
        shapes = tuple(sorted((name_of(p), tuple(sorted(labels_of(p).items()))) for p in pools))
        for kind in KINDS:
            if kind.kind not in objects:
                continue
            items = [o for o in objects[kind.kind] if name_of(o)]
            mine = {n: c for n, c in configs.items() if _generated(n, kind)}
            versions = tuple((name_of(o), _meta(o).get("resourceVersion")) for o in items)
            generated = tuple((n, _meta(c).get("resourceVersion")) for n, c in sorted(mine.items()))
            key = (versions, shapes, generated)
            if self._last.get(kind.kind) == key:
                continue
            try:
                self._sync_kind(kind, items, pools, mine)
            except ApiError as e:  # the next pass tries again
                log.warning("Syncing %ss failed: %s", kind.kind, e)
                self._last.pop(kind.kind, None)
                continue
            self._last[kind.kind] = key

    def _sync_kind(
        self, kind: Kind, items: list[Obj], pools: Sequence[Obj], mine: Mapping[str, Obj]
    ) -> None:
        items = sorted(items, key=lambda o: (str(_meta(o).get("creationTimestamp") or ""),
                                             name_of(o)))  # fmt: skip
        wanted: set[str] = set()
        kept: set[str] = set()  # owners whose generated configs stay as they are
        alive = {name_of(o) for o in items}
        for obj in list(items):
            name = name_of(obj)
            if _meta(obj).get("deletionTimestamp"):
                self._cascade(kind, obj, mine)
                continue
            try:
                keys = self._sync_one(kind, obj, items, pools, mine)
            except GenerateError as e:
                log.warning("%s %s: %s", kind.kind, name, e.condition_message)
                self._status(kind, _named(items, name), e.condition_message)
                kept.add(name)
                continue
            wanted |= keys
            self._status(kind, _named(items, name), None)
        for mc_name, mc in mine.items():
            owner = owned_by(mc, kind.kind)
            if not owner or mc_name in wanted or owner in kept:
                continue
            why = "its owner is gone" if owner not in alive else "its owner no longer selects it"
            log.info("Deleting generated MachineConfig %s: %s %s", mc_name, kind.kind, why)
            self._delete_config(mc_name)

    def _sync_one(
        self, kind: Kind, obj: Obj, items: list[Obj], pools: Sequence[Obj], mine: Mapping[str, Obj]
    ) -> set[str]:
        kind.validate(obj)
        chosen = selected_pools(obj, pools)
        if not chosen:
            raise GenerateError(kind.no_pool)
        files = kind.files(obj)
        keys: set[str] = set()
        for pool in chosen:
            kind.pool_check(obj, pool)
            try:
                live = [o for o in items if not _meta(o).get("deletionTimestamp")]
                key = managed_key(kind.word, pool, obj, live)
            except GenerateError as e:
                what = "kubelet config" if kind is KUBELET else "ctrcfg"
                raise GenerateError(f"could not get {what} key: {e}", bare=True) from e
            obj = self._annotate(kind, obj, items, key)
            want = machine_config(key, name_of(pool), files, obj, self.version)
            have = mine.get(key)
            holder = owned_by(have, kind.kind) if have is not None else ""
            if holder and holder != name_of(obj) and any(name_of(o) == holder for o in live):
                hint = f"remove the {SUFFIX_ANNOTATION} annotation of one of them"
                raise GenerateError(f"MachineConfig {key} is generated from {kind.kind} {holder}: "
                                    + hint)  # fmt: skip
            if have is None:
                self._write_config("POST", MACHINECONFIGS, want)
            elif not _same(have, want):
                want["metadata"]["resourceVersion"] = _meta(have).get("resourceVersion")
                self._write_config("PUT", f"{MACHINECONFIGS}/{key}", want)
            else:
                want = {}
            obj = self._finalize(kind, obj, items, key)
            keys.add(key)
            if want:
                log.info("Applied %s %s on MachineConfigPool %s", kind.kind, name_of(obj),
                         name_of(pool))  # fmt: skip
        return keys

    # -- writes -------------------------------------------------------------------------

    def _replace(self, items: list[Obj], obj: Obj) -> Obj:
        for i, o in enumerate(items):
            if name_of(o) == name_of(obj):
                items[i] = obj
        return obj

    def _patch(self, kind: Kind, obj: Obj, meta: Obj, items: list[Obj]) -> Obj:
        body = {"metadata": {**meta, "resourceVersion": _meta(obj).get("resourceVersion")}}
        done = self.kube.request("PATCH", f"{kind.path}/{name_of(obj)}", body=body,
                                 content_type=MERGE_PATCH)  # fmt: skip
        return self._replace(items, done)

    def _annotate(self, kind: Kind, obj: Obj, items: list[Obj], key: str) -> Obj:
        """Upstream: the object records the suffix of its generated name once."""
        if SUFFIX_ANNOTATION in (_meta(obj).get("annotations") or {}):
            return obj
        return self._patch(kind, obj, {"annotations": {SUFFIX_ANNOTATION: suffix_of(key)}}, items)

    def _finalize(self, kind: Kind, obj: Obj, items: list[Obj], key: str) -> Obj:
        finalizers = list(_meta(obj).get("finalizers") or [])
        if key in finalizers:
            return obj
        return self._patch(kind, obj, {"finalizers": [*finalizers, key]}, items)

    def _cascade(self, kind: Kind, obj: Obj, mine: Mapping[str, Obj]) -> None:
        finalizers = list(_meta(obj).get("finalizers") or [])
        ours = [f for f in finalizers if _generated(f, kind)]
        if not ours:
            return
        for name in ours:
            if name in mine:
                log.info("Deleting generated MachineConfig %s: %s %s deleted", name, kind.kind,
                         name_of(obj))  # fmt: skip
                self._delete_config(name)
        rest = [f for f in finalizers if f not in ours]
        body = {"metadata": {"finalizers": rest or None,
                             "resourceVersion": _meta(obj).get("resourceVersion")}}  # fmt: skip
        try:
            self.kube.request("PATCH", f"{kind.path}/{name_of(obj)}", body=body,
                              content_type=MERGE_PATCH)  # fmt: skip
        except ApiError as e:
            if e.status != 404:
                raise

    def _status(self, kind: Kind, obj: Obj, error: str | None) -> None:
        stamp = self.clock().strftime("%Y-%m-%dT%H:%M:%SZ")
        status = kind.status(obj, error, stamp)
        if status is None:
            return
        try:
            self.kube.request("PATCH", f"{kind.path}/{name_of(obj)}/status",
                              body={"status": status}, content_type=MERGE_PATCH)  # fmt: skip
        except ApiError as e:
            if e.status != 404:
                raise

    def _write_config(self, method: str, path: str, body: Obj) -> None:
        done = self.kube.request(method, path, body=body)
        self.observe_config(done)

    def _delete_config(self, name: str) -> None:
        try:
            self.kube.request("DELETE", f"{MACHINECONFIGS}/{name}")
        except ApiError as e:
            if e.status != 404:
                raise
