"""What the two generating controllers share (upstream ``pkg/controller/common``): the generated
MachineConfig's name per pool (``getManagedKubeletConfigKey``, ``getManagedKeyCtrCfg``), the
MachineConfig itself (``MachineConfigFromIgnConfig`` with ``NewIgnFileBytesOverwriting`` files),
and the pools an object selects (``getPoolsForKubeletConfig``: an empty selector selects none)."""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mcd.model.pool.pools import labels_of, name_of, selector_matches
from mcd.model.pool.render import GENERATED_BY

Obj = dict[str, Any]
GROUP_VERSION = "machineconfiguration.openshift.io/v1"
ROLE_LABEL = "machineconfiguration.openshift.io/role"
SUFFIX_ANNOTATION = "machineconfiguration.openshift.io/mc-name-suffix"
MAX_SUFFIX = 9
"""Upstream ``MaxMCNameSuffix``: ten objects of one kind per pool."""
FILE_MODE = 0o644


class GenerateError(Exception):
    """A refusal: the message goes into the object's status condition as upstream words it."""

    def __init__(self, message: str, *, bare: bool = False) -> None:
        super().__init__(message)
        self.bare = bare
        """True: the message is the whole condition message (upstream's ``syncStatusOnly``
        with a format); False: upstream prefixes it with ``Error: ``."""

    @property
    def condition_message(self) -> str:
        return str(self) if self.bare else f"Error: {self}"


@dataclass(frozen=True)
class GeneratedFile:
    path: str
    data: bytes


def selected_pools(obj: Mapping[str, Any], pools: Sequence[Mapping[str, Any]]) -> list[Obj]:
    """The pools ``spec.machineConfigPoolSelector`` selects, by name; none for an empty or
    missing selector (a pool with a nil selector creeping in must match nothing)."""
    selector = (obj.get("spec") or {}).get("machineConfigPoolSelector")
    if not selector or not (selector.get("matchLabels") or selector.get("matchExpressions")):
        return []
    found = [dict(p) for p in pools if selector_matches(selector, labels_of(p))]
    return sorted(found, key=name_of)


def _suffix(obj: Mapping[str, Any]) -> str | None:
    value = ((obj.get("metadata") or {}).get("annotations") or {}).get(SUFFIX_ANNOTATION)
    return None if value is None else str(value)


def managed_key(
    kind: str,
    pool: Mapping[str, Any],
    obj: Mapping[str, Any],
    siblings: Sequence[Mapping[str, Any]],
) -> str:
    """The generated MachineConfig's name for ``obj`` in ``pool`` (``kind``: ``kubelet`` or
    ``containerruntime``): ``99-<pool>-generated-<kind>`` for the first object of its kind
    selecting the pool, then ``-1`` ... ``-9`` by the suffix each object records in its
    ``mc-name-suffix`` annotation (the one after the highest recorded: the newest object wins
    the merge). ``siblings`` are all objects of the kind."""
    pool_name = name_of(pool)
    base = f"99-{pool_name}-generated-{kind}"
    same_pool = [s for s in siblings if any(name_of(p) == pool_name
                                             for p in selected_pools(s, [pool]))]  # fmt: skip
    mine = _suffix(obj)
    if mine is not None and any(name_of(s) == name_of(obj) for s in same_pool):
        return f"{base}-{mine}" if mine else base
    if len(same_pool) <= 1:
        return base
    highest = 0
    for s in same_pool:
        value = _suffix(s)
        if value:
            try:
                highest = max(highest, int(value))
            except ValueError as e:
                raise GenerateError(f"error converting {value} to int: {e}") from e
    if highest + 1 > MAX_SUFFIX:
        what = "kubelet config" if kind == "kubelet" else "ctrcfgs"
        tail = "kubelet configs" if kind == "kubelet" else "ctrcfgs"
        raise GenerateError(f"max number of supported {what} (10) has been reached. "
                            f"Please delete old {tail} before retrying")  # fmt: skip
    return f"{base}-{highest + 1}"


def suffix_of(key: str) -> str:
    """The ``mc-name-suffix`` value a managed key records ('' for the unsuffixed name)."""
    last = key.rsplit("-", 1)[-1]
    return last if last.isdigit() else ""


def data_url(data: bytes) -> str:
    """Upstream ``dataurl.EncodeBytes`` for the text files generated here: base64, with the
    media type Go's ``http.DetectContentType`` gives text."""
    return "data:text/plain;charset=utf-8;base64," + base64.b64encode(data).decode("ascii")


def machine_config(
    name: str, role: str, files: Sequence[GeneratedFile], owner: Mapping[str, Any], version: str
) -> Obj:
    """The generated MachineConfig: the role label its pool's selector takes, the controller's
    version, ``owner`` as its controller reference (the garbage collector's link; without
    upstream's ``blockOwnerDeletion``, which would need a right on the owner's finalizers
    where the OwnerReferencesPermissionEnforcement admission runs), and the files, each
    overwritten with mode 0644."""
    meta = owner.get("metadata") or {}
    ref = {"apiVersion": GROUP_VERSION, "kind": owner.get("kind", ""), "name": meta.get("name", ""),
           "uid": meta.get("uid", ""), "controller": True}  # fmt: skip
    entries = [{"path": f.path, "overwrite": True, "mode": FILE_MODE,
                "contents": {"source": data_url(f.data), "compression": ""}}
               for f in files]  # fmt: skip
    return {
        "apiVersion": GROUP_VERSION,
        "kind": "MachineConfig",
        "metadata": {"name": name, "labels": {ROLE_LABEL: role},
                     "annotations": {GENERATED_BY: version}, "ownerReferences": [ref]},
        "spec": {"config": {"ignition": {"version": "3.5.0"}, "storage": {"files": entries}}},
    }  # fmt: skip


def owned_by(mc: Mapping[str, Any], kind: str) -> str:
    """The name of the ``kind`` object that controls ``mc`` ('' if none)."""
    for ref in (mc.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("kind") == kind and ref.get("controller"):
            return str(ref.get("name") or "")
    return ""
