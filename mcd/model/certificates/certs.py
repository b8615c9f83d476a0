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
import re
from dataclasses import dataclass

from mcd.model import fields as f
from mcd.model.certificates import x509
from mcd.model.errors import ConfigParseError
from mcd.model.text import goquote
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


_BEGIN = re.compile(rb"-----BEGIN ")


def check_certificates(data: bytes, where: str) -> None:
    """Refuse a bundle that is not PEM certificates before it replaces a good one (stricter
    than upstream, which writes whatever the ControllerConfig holds): at least one block,
    every ``-----BEGIN`` a ``CERTIFICATE`` block whose bytes are a DER certificate. Text
    between blocks (comments, as in system bundles) is allowed; the data is never quoted."""
    if not data.strip():
        raise ConfigParseError("empty certificate bundle: not PEM certificates", where)
    begins = len(_BEGIN.findall(data))
    blocks = x509.pem_blocks(data)
    if not begins:
        raise ConfigParseError("not PEM certificates: no PEM block", where)
    if len(blocks) != begins:
        raise ConfigParseError("not PEM certificates: a PEM block is malformed", where)
    for i, block in enumerate(blocks, 1):
        if block.type != "CERTIFICATE":
            raise ConfigParseError(
                f"not PEM certificates: block {i} is a {goquote(block.type)}", where
            )
        try:
            x509.common_name(block.data)
        except ValueError as e:
            raise ConfigParseError(f"not PEM certificates: block {i}: {e}", where) from None


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
    kubelet_ca = _bytes(spec, "kubeAPIServerServingCAData", "spec")
    check_certificates(kubelet_ca, "spec.kubeAPIServerServingCAData")
    bundles = {KUBELET_CA: _newline(kubelet_ca)}
    cloud = _bytes(spec, "cloudProviderCAData", "spec")
    if cloud:
        check_certificates(cloud, "spec.cloudProviderCAData")
        bundles[CLOUD_CA_BUNDLE] = _newline(cloud)
    cas: dict[str, bytes] = {}
    for key in ("imageRegistryBundleData", "imageRegistryBundleUserData"):
        for i, item in enumerate(f.opt_list(spec, key, "spec")):
            where = f.join(f.join("spec", key), i)
            entry = f.as_map(item, where)
            name = registry_dir(f.opt_str(entry, "file", where) or "")
            if not name or "/" in name or "\x00" in name or name in (".", ":"):
                raise ConfigParseError(f"invalid registry CA file name {goquote(name)}", where)
            cas[name] = _bytes(entry, "data", where)
            check_certificates(cas[name], f.join(where, "data"))
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
