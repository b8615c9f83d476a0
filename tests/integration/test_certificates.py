"""The certificate writer: ControllerConfig certificates on disk as upstream's
syncControllerConfigHandler / writeToDisk write them."""

from __future__ import annotations

import base64
import logging
import os
from pathlib import Path
from typing import Any

import pytest

from mcd.host.ondisk.certwriter import write_certificates
from mcd.host.rootfs import Root
from mcd.model.certificates.certs import certificate_files
from mcd.model.errors import ConfigParseError

CA_A = b"-----BEGIN CERTIFICATE-----\nMIIBAAAA\n-----END CERTIFICATE-----"
CA_B = b"-----BEGIN CERTIFICATE-----\nMIIBBBBB\n-----END CERTIFICATE-----\n"
SECRET = b'{"auths":{"image-registry.openshift-image-registry.svc:5000":{"auth":"c2VjcmV0"}}}'


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def controller_config(rv: str = "7", **spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "kubeAPIServerServingCAData": b64(CA_A),
        "imageRegistryBundleData": [{"file": "quay.io", "data": b64(CA_B)}],
        "imageRegistryBundleUserData": [{"file": "registry.local..5000", "data": b64(CA_A)}],
        "internalRegistryPullSecret": b64(SECRET),
    }
    base.update(spec)
    return {
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "ControllerConfig",
        "metadata": {"name": "machine-config-controller", "resourceVersion": rv},
        "spec": base,
    }


def test_parse_as_upstream() -> None:
    certs = certificate_files(controller_config())
    assert certs.resource_version == "7"
    assert certs.bundles == {"/etc/kubernetes/kubelet-ca.crt": CA_A + b"\n"}  # writeToDisk's \n
    assert certs.registry_cas == {"quay.io": CA_B, "registry.local:5000": CA_A}  # ".." -> ":"
    assert certs.pull_secret == SECRET + b"\n"
    cloud = certificate_files(controller_config(cloudProviderCAData=b64(CA_B)))
    assert (
        cloud.bundles["/etc/kubernetes/static-pod-resources/configmaps/cloud-config/ca-bundle.pem"]
        == CA_B
    )
    with pytest.raises(ConfigParseError, match=r"spec\.kubeAPIServerServingCAData"):
        certificate_files(controller_config(kubeAPIServerServingCAData="%%%"))


def test_write_keeps_modes_removes_stale_registries_and_never_logs_secrets(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = Root(tmp_path)
    (tmp_path / "etc/kubernetes").mkdir(parents=True)
    (tmp_path / "etc/kubernetes/kubelet-ca.crt").write_bytes(b"old")
    os.chmod(tmp_path / "etc/kubernetes/kubelet-ca.crt", 0o600)
    (tmp_path / "etc/docker/certs.d/gone.example.com").mkdir(parents=True)
    (tmp_path / "etc/docker/certs.d/gone.example.com/ca.crt").write_bytes(CA_A)
    caplog.set_level(logging.DEBUG)
    written = write_certificates(root, certificate_files(controller_config()))
    assert (tmp_path / "etc/kubernetes/kubelet-ca.crt").read_bytes() == CA_A + b"\n"
    assert (tmp_path / "etc/kubernetes/kubelet-ca.crt").stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "etc/docker/certs.d/quay.io/ca.crt").read_bytes() == CA_B
    assert (tmp_path / "etc/docker/certs.d/registry.local:5000/ca.crt").read_bytes() == CA_A
    assert not (tmp_path / "etc/docker/certs.d/gone.example.com").exists()
    assert (tmp_path / "etc/mco/internal-registry-pull-secret.json").read_bytes() == SECRET + b"\n"
    assert "/etc/docker/certs.d/quay.io/ca.crt" in written
    assert "c2VjcmV0" not in caplog.text and "MIIB" not in caplog.text


def test_registry_cas_wait_for_certs_d(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    write_certificates(Root(tmp_path), certificate_files(controller_config()))
    assert (tmp_path / "etc/kubernetes/kubelet-ca.crt").exists()
    assert not (tmp_path / "etc/docker").exists()
    assert "/etc/docker/certs.d does not exist yet" in caplog.text
