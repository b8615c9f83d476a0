"""The service-CA rotation of upstream's certificate writer (``syncControllerConfigHandler``).

When the ControllerConfig carries ``machineconfiguration.openshift.io/service-ca-rotate:
"true"`` and the Node's ``machineconfiguration.openshift.io/lastObservedServerCAAnnotation``
differs from it, upstream reads ``ca-bundle.crt`` of the ConfigMap
``openshift-machine-config-operator/kubeconfig-data`` and compares it with the CA data of the
first cluster of ``/etc/kubernetes/kubeconfig``, certificate by certificate (split after each
``-----END CERTIFICATE-----``):

- a certificate of the bundle that the kubeconfig lacks is *added*; unless every added one is
  a signer that rotates by itself during upgrades (``kube-apiserver-localhost-signer``,
  ``openshift-kube-apiserver-operator_localhost-recovery-serving-signer``,
  ``kube-apiserver-lb-signer``), the kubelet is restarted afterwards;
- when the bundle differs and adds something, the kubeconfig's CA data becomes every
  well-formed certificate of the bundle (a malformed one is left out; the first piece that is
  no PEM block at all ends the list), the rest of the file unchanged.

This module decides; :mod:`mcd.agent.sync.certsync` reads, writes and restarts. Certificate bytes
never reach a message: the log lines name subjects only.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from typing import Any

import yaml

from mcd.model.certificates.x509 import common_name, pem_decode
from mcd.model.errors import ConfigParseError
from mcd.model.vocabulary import ANNOTATION_PREFIX

SERVICE_CA_ROTATE = ANNOTATION_PREFIX + "service-ca-rotate"
"""On the ControllerConfig (upstream ``ServiceCARotateAnnotation``); "true" or "false"."""
SERVICE_CA_ROTATE_TRUE = "true"
LAST_OBSERVED_SERVER_CA = ANNOTATION_PREFIX + "lastObservedServerCAAnnotation"
"""On the Node (upstream ``ControllerConfigSyncServerCA``): the service-ca-rotate value seen."""

MCO_NAMESPACE = "openshift-machine-config-operator"
KUBECONFIG_DATA = "kubeconfig-data"
CA_BUNDLE_KEY = "ca-bundle.crt"
KUBECONFIG = "/etc/kubernetes/kubeconfig"
KUBELET_KUBECONFIG = "/var/lib/kubelet/kubeconfig"
KUBELET_UNIT = "kubelet.service"

END_CERTIFICATE = "-----END CERTIFICATE-----"
NO_PEM = "Unable to decode cert into a pem block. Cert is either empty or invalid."


def _malformed(index: int, error: ValueError) -> str:
    """Upstream's logSystem line ends with the certificate itself; mcd names which one of
    ``ca-bundle.crt`` and what is wrong with it, never its bytes."""
    return f'"Malformed Cert, not syncing: certificate {index + 1} of {CA_BUNDLE_KEY}: {error}"'


SELF_ROTATING_SIGNERS = (
    "kube-apiserver-localhost-signer",
    "openshift-kube-apiserver-operator_localhost-recovery-serving-signer",
    "kube-apiserver-lb-signer",
)
"""Upstream: "these rotate randomly during upgrades. need to ignore"."""


def configmap_data(cm: Any, key: str) -> bytes:
    """Upstream ``cmToData``: ``binaryData`` (base64 on the wire) first, then ``data`` read as
    base64 when it is, else as text. A missing key is a :class:`KeyError`."""
    cm = cm if isinstance(cm, dict) else {}
    binary = cm.get("binaryData") or {}
    raw = binary.get(key) if isinstance(binary, dict) else None
    if isinstance(raw, str):
        try:
            return base64.b64decode(raw, validate=True)
        except (binascii.Error, ValueError):
            return raw.encode()
    data = cm.get("data") or {}
    text = data.get(key) if isinstance(data, dict) else None
    if isinstance(text, str):
        try:
            return base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            return text.encode()
    meta = cm.get("metadata") or {}
    raise KeyError(f"{key} not found in {meta.get('namespace', '')}/{meta.get('name', '')}")


def should_rotate(cc_annotations: dict[str, str], node_annotations: dict[str, str]) -> bool:
    """Upstream: read kubeconfig-data only when the ControllerConfig asks for a rotation the
    Node has not observed yet."""
    wanted = cc_annotations.get(SERVICE_CA_ROTATE, "")
    return (
        wanted == SERVICE_CA_ROTATE_TRUE
        and node_annotations.get(LAST_OBSERVED_SERVER_CA, "") != wanted
    )


@dataclass
class CARotation:
    kubeconfig: bytes | None
    """The new ``/etc/kubernetes/kubeconfig``; None when it stays as it is."""
    ca_data: bytes
    """The CA data the kubeconfig ends up with (the kubelet's kubeconfig gets the same)."""
    restart_kubelet: bool
    """Upstream's ``kubeConfigDiff && !allCertsThere && !deferKubeletRestart``."""
    messages: list[str] = field(default_factory=list)
    """Upstream's log lines (``logSystem`` and ``klog``), in order; subjects only."""
    defer_kubelet_restart: bool = False
    """Upstream's ``deferKubeletRestart`` after the plan: True unless an added certificate
    needs the kubelet restarted (set even when nothing was added, as upstream)."""


def _split(data: bytes) -> list[str]:
    text = data.decode("utf-8", "replace").strip()
    pieces = text.split(END_CERTIFICATE)
    return [p + END_CERTIFICATE for p in pieces[:-1]] + [pieces[-1]]  # Go strings.SplitAfter


def _subject(cert: str) -> str | None:
    """The common name; None when the piece is no PEM block ('' pieces are not)."""
    block = pem_decode(cert.encode())
    if block is None:
        return None
    return common_name(block.data)


def load_kubeconfig(data: bytes, path: str) -> dict[str, Any]:
    """A kubeconfig with at least one cluster (upstream indexes ``Clusters[0]``)."""
    try:
        doc = yaml.safe_load(data)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise ConfigParseError(f"could not unmarshal kubeconfig{where}", path) from None
    if not isinstance(doc, dict):
        raise ConfigParseError("could not unmarshal kubeconfig: not a mapping", path)
    clusters = doc.get("clusters")
    if not isinstance(clusters, list) or not clusters or not isinstance(clusters[0], dict):
        raise ConfigParseError("clusters cannot be nil", path)
    if not isinstance(clusters[0].get("cluster") or {}, dict):
        raise ConfigParseError("clusters[0].cluster is not a mapping", path)
    return doc


def ca_data_of(doc: dict[str, Any], path: str) -> bytes:
    raw = (doc["clusters"][0].get("cluster") or {}).get("certificate-authority-data") or ""
    try:
        return base64.b64decode(str(raw), validate=True)
    except (binascii.Error, ValueError):
        raise ConfigParseError(
            "invalid base64 data", f"{path}: clusters[0].cluster.certificate-authority-data"
        ) from None


def with_ca_data(doc: dict[str, Any], ca: bytes) -> bytes:
    """The kubeconfig with its first cluster's CA data replaced, everything else kept."""
    cluster = doc["clusters"][0].get("cluster") or {}
    cluster["certificate-authority-data"] = base64.b64encode(ca).decode()
    doc["clusters"][0]["cluster"] = cluster
    return yaml.safe_dump(doc, sort_keys=False, default_flow_style=False).encode()


def plan_ca_rotation(kubeconfig: bytes, bundle: bytes, path: str = KUBECONFIG) -> CARotation:
    """What the service-CA bundle ``bundle`` does to the kubeconfig ``kubeconfig``."""
    doc = load_kubeconfig(kubeconfig, path)
    on_disk = ca_data_of(doc, path)
    diff = on_disk.strip() != bundle.strip()
    from_cm, from_disk = _split(bundle), set(_split(on_disk))
    messages: list[str] = []
    added: list[str] = []
    full: list[str] = []
    for index, cert in enumerate(from_cm):
        if cert not in from_disk:
            added.append(cert)
        try:
            subject = _subject(cert)
        except ValueError as e:
            messages.append(_malformed(index, e))
            continue
        if subject is None:
            messages.append(NO_PEM)
            break
        full.append(cert)
    defer = True
    for cert in added:
        try:
            subject = _subject(cert)
        except ValueError as e:
            messages.append(_malformed(from_cm.index(cert), e))
            continue
        if subject is None:
            messages.append(NO_PEM)
            break
        messages.append(
            f'"Cert not found in kubeconfig. This means we need to write to disk. '
            f'Subject is: {subject}"'
        )
        if any(signer in subject for signer in SELF_ROTATING_SIGNERS):
            messages.append('"Skipping kubelet restart"')
        else:
            messages.append('"Need to restart kubelet"')
            defer = False
    if not (diff and added):
        return CARotation(None, on_disk, False, messages, defer)
    ca = "".join(full).encode()
    messages.append(f"Writing new Data to {KUBECONFIG}")
    return CARotation(with_ca_data(doc, ca), ca, not defer and bool(ca), messages, defer)


X509_MARKERS = ("x509", "certificate verify failed")


def is_x509_error(text: str) -> bool:
    """Upstream's ``strings.Contains(strings.ToLower(err.Error()), "x509")``; Python's TLS
    says ``certificate verify failed`` where Go's says ``x509: ...``."""
    lowered = text.lower()
    return any(marker in lowered for marker in X509_MARKERS)
