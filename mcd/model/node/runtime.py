"""Which container runtime a node runs, and where its CRI socket is (pure).

Two witnesses, one authority:

1. The Node's ``status.nodeInfo.containerRuntimeVersion`` (``containerd://1.6.20``,
   ``cri-o://1.29.1``): the kubelet fills it from the CRI ``Version`` call on the runtime it
   really uses, so when it names a runtime mcd knows, that is the answer. A node may carry
   both runtimes' files (Docker installs containerd beside CRI-O); only the kubelet's own
   report says which one its pods run in.
2. The host, under the root, before the kubelet has reported (a node joining) or without a
   Node (``mcd plan --root``): the endpoint ``/etc/crictl.yaml`` names (a containerd or CRI-O
   socket by its file name), else the runtime whose standard socket exists, when exactly one
   does.

Neither: the runtime is not known and mcd keeps upstream's assumption, CRI-O.

The endpoint mcd pulls through is the host's configured one when it belongs to the chosen
runtime, else that runtime's standard socket.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from mcd.model.errors import ConfigError
from mcd.model.vocabulary import CONTAINERD_RUNTIME, CRIO_RUNTIME

CRIO = CRIO_RUNTIME
CONTAINERD = CONTAINERD_RUNTIME
RUNTIMES = (CRIO, CONTAINERD)

SOCKETS: dict[str, tuple[str, ...]] = {
    CRIO: ("/var/run/crio/crio.sock", "/run/crio/crio.sock"),
    CONTAINERD: ("/run/containerd/containerd.sock", "/var/run/containerd/containerd.sock"),
}
"""Each runtime's standard CRI sockets, the first being its default endpoint."""
SERVICES = {CRIO: "crio.service", CONTAINERD: "containerd.service"}
CRICTL_CONFIG = "/etc/crictl.yaml"
CONTAINERD_CONFIG = "/etc/containerd/config.toml"

_VERSION_SCHEMES = {"containerd": CONTAINERD, "cri-o": CRIO}
_SOCKET_NAMES = {"containerd.sock": CONTAINERD, "crio.sock": CRIO}


def runtime_of_version(version: str) -> str:
    """The runtime a ``containerRuntimeVersion`` names (``containerd://1.6.20``), '' else."""
    scheme, sep, _ = version.strip().partition("://")
    return _VERSION_SCHEMES.get(scheme.lower(), "") if sep else ""


def node_runtime_version(node: Mapping[str, Any]) -> str:
    """``status.nodeInfo.containerRuntimeVersion`` of a Node object ('' when absent)."""
    info = ((node.get("status") or {}).get("nodeInfo")) or {}
    value = info.get("containerRuntimeVersion") if isinstance(info, Mapping) else None
    return value if isinstance(value, str) else ""


def socket_of_endpoint(endpoint: str) -> str:
    """The socket path of a ``unix://`` endpoint (a bare absolute path is one too); ''
    for anything else (tcp://, npipe://, relative)."""
    path = endpoint.strip()
    if path.startswith("unix://"):
        path = path[len("unix://") :]
    elif "://" in path:
        return ""
    return posixpath.normpath(path) if path.startswith("/") else ""


def runtime_of_endpoint(endpoint: str) -> str:
    """The runtime a socket belongs to, by its file name (``containerd.sock``, ``crio.sock``)."""
    return _SOCKET_NAMES.get(posixpath.basename(socket_of_endpoint(endpoint)), "")


_CRICTL_ENDPOINT = re.compile(r"^runtime-endpoint\s*:\s*(['\"]?)([^'\"#\s]+)\1\s*(?:#.*)?$")


def crictl_endpoint(text: str) -> str:
    """``runtime-endpoint`` of a ``crictl.yaml`` (a flat mapping), '' when not set."""
    for line in text.splitlines():
        match = _CRICTL_ENDPOINT.match(line.strip())
        if match:
            return match.group(2)
    return ""


@dataclass(frozen=True)
class HostRuntime:
    """What the host under the root shows: the endpoint crictl is configured with ('' when
    none) and the standard sockets that exist."""

    configured: str = ""
    sockets: tuple[str, ...] = ()


@dataclass(frozen=True)
class RuntimeChoice:
    """The node's runtime ('' when not known), the CRI endpoint to reach it, and why."""

    name: str
    endpoint: str
    source: str

    @property
    def service(self) -> str:
        """The runtime's systemd unit (CRI-O's when not known, as upstream)."""
        return SERVICES.get(self.name, SERVICES[CRIO])

    @property
    def socket(self) -> str:
        return socket_of_endpoint(self.endpoint)


def default_endpoint(runtime: str) -> str:
    return "unix://" + SOCKETS.get(runtime, SOCKETS[CRIO])[0]


def decide(node_version: str, host: HostRuntime) -> RuntimeChoice:
    """The node's runtime from the kubelet's report and the host (module docstring)."""
    configured = runtime_of_endpoint(host.configured)
    present = {name for name in RUNTIMES if set(SOCKETS[name]) & set(host.sockets)}
    reported = runtime_of_version(node_version)
    if reported:
        source = f"the Node's containerRuntimeVersion {node_version.strip()}"
        return RuntimeChoice(reported, _endpoint(reported, host), source)
    if configured:
        source = f"{CRICTL_CONFIG} runtime-endpoint {host.configured}"
        return RuntimeChoice(configured, _endpoint(configured, host), source)
    if len(present) == 1:
        (name,) = present
        return RuntimeChoice(name, _endpoint(name, host), "the only CRI socket on the host")
    why = "both CRI-O's and containerd's sockets" if present else "no CRI socket"
    return RuntimeChoice(
        "", default_endpoint(CRIO), f"not known ({why} on the host); CRI-O assumed, as upstream"
    )


def _endpoint(runtime: str, host: HostRuntime) -> str:
    if runtime_of_endpoint(host.configured) == runtime:
        return "unix://" + socket_of_endpoint(host.configured)
    for socket in SOCKETS[runtime]:
        if socket in host.sockets:
            return "unix://" + socket
    return default_endpoint(runtime)


class ContainerdConfigError(ConfigError):
    """``/etc/containerd/config.toml`` cannot be decoded."""


CRI_REGISTRY_PLUGIN = {1: "cri", 2: "io.containerd.grpc.v1.cri", 3: "io.containerd.cri.v1.images"}
"""The plugin holding ``registry.config_path``, by the config file's ``version``."""


def registry_config_paths(config_toml: bytes) -> tuple[str, ...]:
    """The directories containerd's CRI plugin reads ``hosts.toml`` from: its
    ``[plugins."io.containerd.grpc.v1.cri".registry] config_path`` (``plugins.cri`` in a
    version 1 file, ``plugins."io.containerd.cri.v1.images"`` in containerd 2's version 3),
    a ``:``-separated list as containerd splits it (``filepath.SplitList``); empty when
    unset (containerd 1.6/1.7's default: then no ``hosts.toml`` is read at all)."""
    import tomllib  # noqa: PLC0415  (only when a containerd host is inspected)

    try:
        doc = tomllib.loads(config_toml.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise ContainerdConfigError(f"cannot decode {CONTAINERD_CONFIG}: {e}") from e
    plugins = doc.get("plugins")
    if not isinstance(plugins, dict):
        return ()
    version = doc.get("version", 1)
    cri = plugins.get(CRI_REGISTRY_PLUGIN.get(version, "")) if isinstance(version, int) else None
    registry = cri.get("registry") if isinstance(cri, dict) else None
    value = registry.get("config_path") if isinstance(registry, dict) else None
    if not isinstance(value, str):
        return ()
    return tuple(p for p in value.split(":") if p)


def unread_registry_dirs(roots: Iterable[str], wanted: Iterable[str]) -> list[str]:
    """The directories of ``wanted`` that containerd, reading ``roots``, never looks in."""
    seen = {posixpath.normpath(r) for r in roots}
    return [w for w in wanted if posixpath.normpath(w) not in seen]
