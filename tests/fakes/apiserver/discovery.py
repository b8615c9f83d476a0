"""Discovery documents (``/version``, ``/api``, ``/apis``, resource lists) for the fake.

Legacy (non-aggregated) discovery, which both kubectl 1.20 and 1.32 accept.
``pods/eviction`` is listed so that ``kubectl drain`` evicts rather than deletes.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from tests.fakes.apiserver.cluster import RESOURCES
from tests.fakes.apiserver.store import Obj

VERBS = ["create", "delete", "get", "list", "patch", "update", "watch"]
SUBRESOURCES: dict[str, list[dict[str, Any]]] = {
    "v1": [
        {"name": "nodes/status", "singularName": "", "namespaced": False, "kind": "Node",
         "verbs": ["get", "patch", "update"]},
        {"name": "pods/eviction", "singularName": "", "namespaced": True, "group": "policy",
         "version": "v1", "kind": "Eviction", "verbs": ["create"]},
        {"name": "pods/status", "singularName": "", "namespaced": True, "kind": "Pod",
         "verbs": ["get", "patch", "update"]},
    ],
    "machineconfiguration.openshift.io/v1": [
        {"name": "machineconfigpools/status", "singularName": "", "namespaced": False,
         "kind": "MachineConfigPool", "verbs": ["get", "patch", "update"]},
        {"name": "machineconfignodes/status", "singularName": "", "namespaced": False,
         "kind": "MachineConfigNode", "verbs": ["get", "patch", "update"]},
    ],
}  # fmt: skip


def _group_versions() -> dict[str, list[str]]:
    groups: dict[str, list[str]] = defaultdict(list)
    for r in RESOURCES:
        if r.group and r.version not in groups[r.group]:
            groups[r.group].append(r.version)
    return groups


def _resource_list(group: str, version: str) -> Obj | None:
    entries = [
        {
            "name": r.plural,
            "singularName": r.kind.lower(),
            "namespaced": r.namespaced,
            "kind": r.kind,
            "verbs": VERBS,
            **({"shortNames": list(r.short)} if r.short else {}),
        }
        for r in RESOURCES
        if r.group == group and r.version == version
    ]
    if not entries:
        return None
    gv = f"{group}/{version}" if group else version
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": gv,
        "resources": entries + (SUBRESOURCES.get(gv, [])),
    }


def document(path: str) -> Obj | None:
    """The discovery document at ``path``, or None when ``path`` is not discovery."""
    path = path.rstrip("/") or "/"
    if path == "/version":
        return {
            "major": "1",
            "minor": "30",
            "gitVersion": "v1.30.0-mcd-fake",
            "platform": "linux/amd64",
        }
    if path == "/api":
        return {"kind": "APIVersions", "versions": ["v1"],
                "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]}  # fmt: skip
    groups = _group_versions()
    if path == "/apis":
        return {
            "kind": "APIGroupList",
            "apiVersion": "v1",
            "groups": [_group(name, versions) for name, versions in sorted(groups.items())],
        }
    parts = [p for p in path.split("/") if p]
    if parts == ["api", "v1"]:
        return _resource_list("", "v1")
    if len(parts) == 2 and parts[0] == "apis" and parts[1] in groups:
        return {"kind": "APIGroup", "apiVersion": "v1", **_group(parts[1], groups[parts[1]])}
    if len(parts) == 3 and parts[0] == "apis":
        return _resource_list(parts[1], parts[2])
    return None


def _group(name: str, versions: list[str]) -> Obj:
    entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": entries, "preferredVersion": entries[0]}
