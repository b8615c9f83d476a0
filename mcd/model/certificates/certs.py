"""What the certificate writer puts on the node (upstream ``syncControllerConfigHandler``).

The ``ControllerConfig`` named ``machine-config-controller`` carries the
certificates the operator rotates without rendering a new MachineConfig:

- ``spec.kubeAPIServerServingCAData`` -> ``/etc/kubernetes/kubelet-ca.crt``
- ``spec.cloudProviderCAData`` -> the cloud CA bundle, when present
- ``spec.imageRegistryBundleData`` + ``imageRegistryBundleUserData`` ->
  ``/etc/docker/certs.d/<file, '..' read as ':'>/ca.crt``
- ``spec.internalRegistryPullSecret`` -> ``/etc/mco/internal-registry-pull-secret.json``

Go encodes ``[]byte`` as base64 in JSON; ``writeToDisk`` appends a newline to
bundle data that lacks one. Validation and the drift monitor ignore the CA
bundles and the pull secret, and stale-file removal never deletes them, as
upstream (``getFilesToIgnore``, ``deleteStaleData``).
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

from mcd.model import fields as f
from mcd.model.errors import ConfigParseError
from mcd.model.vocabulary import CLOUD_CA_BUNDLE, INTERNAL_REGISTRY_PULL_SECRET, KUBELET_CA

CONTROLLER_CONFIG_NAME = "machine-config-controller"
IMAGE_CA_DIR = "/etc/docker/certs.d"


@dataclass(frozen=True)
class CertificateFiles:
    resource_version: str
    bundles: dict[str, bytes]
    """Node path -> bytes for the CA bundles (newline-terminated, as ``writeToDisk``)."""
    registry_cas: dict[str, bytes]
    """Directory name under ``/etc/docker/certs.d`` -> ``ca.crt`` bytes."""
    pull_secret: bytes | None


def _bytes(spec: f.JSONMap, key: str, path: str) -> bytes:
    raw = f.opt_str(spec, key, path)
    if not raw:
        return b""
    try:
        return base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError) as e:
        raise ConfigParseError(f"invalid base64 data: {e}", f.join(path, key)) from e


def _newline(data: bytes) -> bytes:
    return data if data.endswith(b"\n") else data + b"\n"


def registry_dir(file: str) -> str:
    """Upstream: ``strings.ReplaceAll(CA.File, "..", ":")`` (``host..5000`` is ``host:5000``)."""
    return file.replace("..", ":")


def certificate_files(obj: object) -> CertificateFiles:
    """Parse a ControllerConfig into the files the certificate writer owns."""
    doc = f.as_map(obj, "")
    meta = f.opt_map(doc, "metadata", "")
    spec = f.opt_map(doc, "spec", "")
    bundles = {KUBELET_CA: _newline(_bytes(spec, "kubeAPIServerServingCAData", "spec"))}
    cloud = _bytes(spec, "cloudProviderCAData", "spec")
    if cloud:
        bundles[CLOUD_CA_BUNDLE] = _newline(cloud)
    cas: dict[str, bytes] = {}
    for key in ("imageRegistryBundleData", "imageRegistryBundleUserData"):
        for i, item in enumerate(f.opt_list(spec, key, "spec")):
            where = f.join(f.join("spec", key), i)
            entry = f.as_map(item, where)
            name = registry_dir(f.opt_str(entry, "file", where) or "")
            if not name or "/" in name or name in (".", ":"):
                raise ConfigParseError(f"invalid registry CA file name {name!r}", where)
            cas[name] = _bytes(entry, "data", where)
    secret = _bytes(spec, "internalRegistryPullSecret", "spec") if (
        "internalRegistryPullSecret" in spec
    ) else None  # fmt: skip
    return CertificateFiles(
        resource_version=f.opt_str(meta, "resourceVersion", "metadata") or "",
        bundles=bundles,
        registry_cas=cas,
        pull_secret=_newline(secret) if secret else secret,
    )


__all__ = ["INTERNAL_REGISTRY_PULL_SECRET", "CertificateFiles", "certificate_files"]
