"""The Ignition document the machine-config-server hands a booting node (pure).

Upstream ``clusterServer.GetConfig`` with its appenders (``pkg/server/server.go``), then
``ConvertRawExtIgnitionToVersion`` (``api.go``), in the same order:

1. the rendered MachineConfig's Ignition as spec 3.5 (``ParseAndConvertConfig``);
2. below spec 3.3, kernel arguments moved back into the MachineConfig
   (``MigrateKernelArgsIfNecessary``);
3. the kubelet CA replaced or added at ``/etc/kubernetes/kubelet-ca.crt``
   (``addDataAndMaybeAppendToIgnition``: a paused pool still gets the current CA);
4. ``/etc/machine-config-daemon/node-annotations.json``: current = desired = first pivot =
   the served config, state Done (``appendNodeAnnotations``), and mcd's own annotations
   the server adds (the join-token use that served the node);
5. ``/etc/kubernetes/kubeconfig``, when the server has one to give (``appendKubeConfig``);
6. ``/etc/mcs-machine-config-content.json``: the MachineConfig as served, for debugging
   drift (``appendInitialMachineConfig``);
7. ``/etc/ignition-machine-config-encapsulated.json``: the MachineConfig with an empty
   Ignition config of the served version, for the first-boot service (``appendEncapsulated``,
   always last);
8. the whole document written down in the requested spec version.

Two deliberate differences: a file mcd adds replaces an entry of the config at the same
path instead of duplicating it (Ignition refuses duplicate paths), and the two files
that carry secrets (the kubeconfig's token, the content file's copy of the whole config)
are mode 0600, not 0644 (``DESIGN.md``, invariant 5).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mcd.model.errors import ConfigError
from mcd.model.ignition.convert import migrate_kernel_arguments, to_version
from mcd.model.ignition.dataurl import encode_data_url
from mcd.model.ignition.merge import to_spec3
from mcd.model.ignition.parse import parse_ignition

JSONObj = dict[str, Any]

NODE_ANNOTATIONS = "/etc/machine-config-daemon/node-annotations.json"
KUBECONFIG = "/etc/kubernetes/kubeconfig"
CONTENT = "/etc/mcs-machine-config-content.json"
ENCAPSULATED = "/etc/ignition-machine-config-encapsulated.json"
KUBELET_CA = "/etc/kubernetes/kubelet-ca.crt"

_PREFIX = "machineconfiguration.openshift.io/"
CURRENT, DESIRED, FIRST_PIVOT, STATE = (
    _PREFIX + "currentConfig",
    _PREFIX + "desiredConfig",
    _PREFIX + "firstPivotConfig",
    _PREFIX + "state",
)
PUBLIC_MODE, PRIVATE_MODE = 0o644, 0o600


@dataclass(frozen=True)
class Extras:
    """What the server adds beside the pool's config (each optional)."""

    kubelet_ca: bytes = b""
    kubeconfig: bytes = b""
    annotations: Mapping[str, str] = field(default_factory=dict)
    """More annotations for the node-annotations file (mcd's own: which join-token use
    served the node); upstream's four keys always win."""


def node_annotations(config_name: str, more: Mapping[str, str] | None = None) -> str:
    """The node-annotations file (upstream ``getNodeAnnotation``, keys sorted as Go's)."""
    values = {CURRENT: config_name, DESIRED: config_name, FIRST_PIVOT: config_name, STATE: "Done"}
    return json.dumps({**(more or {}), **values}, sort_keys=True, separators=(",", ":"))


def _file(path: str, data: bytes, mode: int) -> JSONObj:
    return {
        "path": path,
        "overwrite": True,
        "contents": {"source": encode_data_url(data)},
        "mode": mode,
    }


def _put(doc: JSONObj, path: str, data: bytes, mode: int = PUBLIC_MODE) -> None:
    files: list[Any] = doc.setdefault("storage", {}).setdefault("files", [])
    entry = _file(path, data, mode)
    for i, existing in enumerate(files):
        if isinstance(existing, Mapping) and existing.get("path") == path:
            files[i] = entry
            return
    files.append(entry)


def _replace_or_add(doc: JSONObj, path: str, data: bytes) -> None:
    """Upstream ``addDataAndMaybeAppendToIgnition``: new contents for an existing entry
    (its mode and owner kept), a new entry otherwise; nothing when ``data`` is empty."""
    if not data:
        return
    for existing in (doc.get("storage") or {}).get("files") or []:
        if isinstance(existing, dict) and existing.get("path") == path:
            existing["contents"] = {"source": encode_data_url(data)}
            existing.pop("append", None)
            return
    _put(doc, path, data)


def _empty_ignition(version: str) -> JSONObj:
    return {"ignition": {"version": version}}


def served_config(
    machine_config: Mapping[str, Any], config_name: str, version: str, extras: Extras
) -> bytes:
    """The JSON body for a node of the pool whose served config is ``machine_config``
    (named ``config_name``), in spec ``version``. Raises the model's ``ConfigError``
    when the config does not parse or cannot be said in that version."""
    mc: JSONObj = copy.deepcopy(dict(machine_config))
    spec = mc.setdefault("spec", {})
    doc = to_spec3(spec.get("config"), "spec.config")
    migrate_kernel_arguments(doc, spec, version)
    _replace_or_add(doc, KUBELET_CA, extras.kubelet_ca)
    _put(doc, NODE_ANNOTATIONS, node_annotations(config_name, extras.annotations).encode())
    if extras.kubeconfig:
        _put(doc, KUBECONFIG, extras.kubeconfig, PRIVATE_MODE)
    _put(doc, CONTENT, json.dumps(mc, indent=4).encode(), PRIVATE_MODE)
    encapsulated = copy.deepcopy(mc)
    encapsulated["spec"]["config"] = _empty_ignition(version)
    _put(doc, ENCAPSULATED, json.dumps(encapsulated, separators=(",", ":")).encode())
    return json.dumps(to_version(doc, version), separators=(",", ":")).encode()


def with_annotations(body: bytes, config_name: str, more: Mapping[str, str]) -> bytes | None:
    """``body`` (served with no annotations of mcd's own) with ``more`` in its
    node-annotations file: the same bytes :func:`served_config` builds with them, without
    building the document again (a join token's use differs per node, the rest does not).
    None when the file cannot be told apart in ``body`` (then build it whole)."""
    plain = encode_data_url(node_annotations(config_name).encode()).encode()
    if body.count(plain) != 1:
        return None
    return body.replace(
        plain, encode_data_url(node_annotations(config_name, more).encode()).encode()
    )


@dataclass(frozen=True)
class Unpacked:
    """A served document taken apart again, for a host without Ignition (``mcd join``)."""

    machine_config: JSONObj
    """The MachineConfig as served (the content file): what the node is to be on."""
    extras: tuple[tuple[str, bytes, int], ...]
    """The files the server added beside the config: (path, data, mode)."""


def unpack(doc: Mapping[str, Any]) -> Unpacked:
    """The MachineConfig and the server's own files of a served document (any spec version
    mcd parses); the encapsulated MachineConfig is left out (the whole config is applied at
    once, nothing is left for a first-boot service). ``ConfigError`` when it is not one."""
    parsed = parse_ignition(doc, "served")
    by_path = {f.path: f for f in parsed.files}
    content = by_path.get(CONTENT)
    if content is None:
        raise ConfigError(f"the served config has no {CONTENT}: not from a machine-config-server")
    try:
        mc = json.loads(content.data())
    except ValueError:
        raise ConfigError(f"{CONTENT}: not JSON") from None
    if not isinstance(mc, dict):
        raise ConfigError(f"{CONTENT}: not a MachineConfig")
    extras = tuple(
        (path, by_path[path].data(), by_path[path].effective_mode)
        for path in (KUBELET_CA, NODE_ANNOTATIONS, KUBECONFIG, CONTENT)
        if path in by_path
    )
    return Unpacked(mc, extras)
