"""A ControllerConfig the certificate writer refuses (model/certificates/certs): each refusal
names the field (kubelet CA, cloud CA, registry CA entry, pull secret, resource version) and
what is wrong with the bundle, never its bytes; nothing is written."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from mcd.model.certificates.certs import certificate_files
from mcd.model.errors import ConfigParseError

CERTS = Path(__file__).resolve().parents[1] / "data" / "certs"
CA = (CERTS / "kube-apiserver-localhost-signer.pem").read_bytes()
KEY = b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"
NOT_DER = b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"
KUBE = "spec.kubeAPIServerServingCAData: "


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def cc(meta: Any = None, **spec: Any) -> dict[str, Any]:
    spec.setdefault("kubeAPIServerServingCAData", b64(CA))
    return {"kind": "ControllerConfig", "metadata": meta if meta is not None else {"name": "m"},
            "spec": spec}  # fmt: skip


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        (cc(kubeAPIServerServingCAData=b64(b" \n\t")),
         KUBE + "empty certificate bundle: not PEM certificates"),
        (cc(kubeAPIServerServingCAData=b64(b"hello")), KUBE + "not PEM certificates: no PEM block"),
        (cc(kubeAPIServerServingCAData=b64(CA + b"-----BEGIN CERTIFICATE-----\nAAA\n")),
         KUBE + "not PEM certificates: a PEM block is malformed"),
        (cc(kubeAPIServerServingCAData=b64(CA + KEY)),
         KUBE + 'not PEM certificates: block 2 is a "PRIVATE KEY"'),
        (cc(kubeAPIServerServingCAData=5), KUBE + "expected a string, got an integer"),
        (cc(cloudProviderCAData=b64(NOT_DER)),
         "spec.cloudProviderCAData: not PEM certificates: block 1: malformed certificate"),
        (cc(cloudProviderCAData=b64(b"x")),
         "spec.cloudProviderCAData: not PEM certificates: no PEM block"),
        (cc(imageRegistryBundleData=[{"file": "r..5000", "data": b64(b"x")}]),
         "spec.imageRegistryBundleData[0].data: not PEM certificates: no PEM block"),
        (cc(imageRegistryBundleUserData=[{"file": "r", "data": b64(CA)},
                                         {"file": "s", "data": b64(KEY)}]),
         'spec.imageRegistryBundleUserData[1].data: not PEM certificates: block 1 is a '
         '"PRIVATE KEY"'),
        (cc(imageRegistryBundleData=["x"]),
         "spec.imageRegistryBundleData[0]: expected an object, got a string"),
        (cc(imageRegistryBundleData=[{"data": b64(CA)}]),
         'spec.imageRegistryBundleData[0]: invalid registry CA file name ""'),
        (cc(imageRegistryBundleData=[{"file": "a\x00b", "data": b64(CA)}]),
         'spec.imageRegistryBundleData[0]: invalid registry CA file name "a\\x00b"'),
        (cc(imageRegistryBundleData=[{"file": 5, "data": b64(CA)}]),
         "spec.imageRegistryBundleData[0].file: expected a string, got an integer"),
        (cc(internalRegistryPullSecret=5),
         "spec.internalRegistryPullSecret: expected a string, got an integer"),
        (cc(meta={"resourceVersion": 5}), "metadata.resourceVersion: expected a string, got an integer"),
        (cc(meta=[1]), "metadata: expected an object, got a list"),
        ({"spec": [1]}, "spec: expected an object, got a list"),
        ([1], "expected an object, got a list"),
    ],
)  # fmt: skip
def test_a_bad_controller_config_is_refused_naming_the_field(obj: Any, message: str) -> None:
    with pytest.raises(ConfigParseError) as e:
        certificate_files(obj)
    assert str(e.value) == message
    assert "AAAA" not in str(e.value)


def test_comments_between_certificates_are_allowed_and_kept() -> None:
    bundle = b"# cluster CA\n" + CA + b"# the same again\n" + CA
    assert (
        certificate_files(cc(kubeAPIServerServingCAData=b64(bundle))).bundles[
            "/etc/kubernetes/kubelet-ca.crt"
        ]
        == bundle
    )
