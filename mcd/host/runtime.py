"""The node's container runtime as its host shows it, under the root: the endpoint
``/etc/crictl.yaml`` names and the standard CRI sockets present (the decision itself is
pure: :func:`mcd.model.node.runtime.decide`, where the Node's own report outranks these);
and, on containerd, whether its CRI plugin reads the registry directories mcd manages."""

from __future__ import annotations

import logging

from mcd.host.errors import HostError
from mcd.host.rootfs import Root
from mcd.model.certificates.certs import IMAGE_CA_DIR
from mcd.model.disruption.hosts import CERTS_D
from mcd.model.node import runtime as rt

log = logging.getLogger(__name__)

MAX_CONFIG = 1 << 20
"""Bytes read of crictl.yaml or containerd's config.toml at most."""


def _read(root: Root, path: str) -> bytes | None:
    try:
        data = root.read_bytes(path)
    except (OSError, HostError):
        return None
    return data[:MAX_CONFIG]


def host_runtime(root: Root) -> rt.HostRuntime:
    """What the host under ``root`` shows: crictl's configured endpoint, the sockets there."""
    data = _read(root, rt.CRICTL_CONFIG)
    configured = rt.crictl_endpoint(data.decode(errors="replace")) if data else ""
    sockets = tuple(path for paths in rt.SOCKETS.values() for path in paths if _exists(root, path))
    return rt.HostRuntime(configured, sockets)


def _exists(root: Root, path: str) -> bool:
    try:
        return root.exists(path)
    except (OSError, HostError):
        return False


def detect(root: Root, node_version: str = "") -> rt.RuntimeChoice:
    """The node's runtime: the kubelet's ``containerRuntimeVersion`` when it names one,
    else the host's."""
    return rt.decide(node_version, host_runtime(root))


def registry_warnings(root: Root, choice: rt.RuntimeChoice) -> list[str]:
    """On containerd: the registry directories mcd manages that its CRI plugin does not read
    (``registry.config_path`` in ``/etc/containerd/config.toml``): ``hosts.toml`` files under
    ``/etc/containerd/certs.d`` and the certificate writer's registry CAs under
    ``/etc/docker/certs.d``. Empty on other runtimes or when both are read."""
    if choice.name != rt.CONTAINERD:
        return []
    data = _read(root, rt.CONTAINERD_CONFIG)
    if data is None:
        return [f"{rt.CONTAINERD_CONFIG} is missing: containerd reads no hosts.toml"]
    try:
        roots = rt.registry_config_paths(data)
    except rt.ContainerdConfigError as e:
        return [str(e)]
    shown = ":".join(roots) or "unset"
    return [
        f"containerd does not read {where} (registry config_path: {shown}); "
        f'set config_path = "{CERTS_D}:{IMAGE_CA_DIR}" to have it read {what}'
        for where, what in (
            (CERTS_D, "the hosts.toml files there"),
            (IMAGE_CA_DIR, "the registry CAs mcd writes there"),
        )
        if where in rt.unread_registry_dirs(roots, (CERTS_D, IMAGE_CA_DIR))
    ]
