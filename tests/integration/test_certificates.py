"""The certificate writer: ControllerConfig certificates on disk as upstream's
syncControllerConfigHandler / writeToDisk write them."""

from __future__ import annotations

import base64
import logging
import os
from pathlib import Path
from typing import Any

import pytest

from mcd.host.errors import HostError
from mcd.host.ondisk.certwriter import write_certificates
from mcd.host.rootfs import Root
from mcd.model.certificates.certs import certificate_files
from mcd.model.errors import ConfigParseError

CERTS = Path(__file__).resolve().parents[1] / "data/certs"
CA_A = (CERTS / "kube-apiserver-lb-signer.pem").read_bytes().rstrip(b"\n")  # no final newline
CA_B = (CERTS / "kube-apiserver-localhost-signer.pem").read_bytes()
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
    assert "c2VjcmV0" not in caplog.text
    assert CA_A.splitlines()[1].decode() not in caplog.text


def test_registry_cas_wait_for_certs_d(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    write_certificates(Root(tmp_path), certificate_files(controller_config()))
    assert (tmp_path / "etc/kubernetes/kubelet-ca.crt").exists()
    assert not (tmp_path / "etc/docker").exists()
    assert "/etc/docker/certs.d does not exist yet" in caplog.text


# -- nothing outside its own paths (issue 28) ---------------------------------------------


def _outside(tmp_path: Path) -> Path:
    """A directory beside the root, with a registry-looking directory a cleanup must not touch."""
    outside = tmp_path / "outside"
    (outside / "stale.example.com").mkdir(parents=True)
    (outside / "stale.example.com/ca.crt").write_bytes(CA_A)
    (outside / "keep").write_bytes(b"keep")
    return outside


def _tree(path: Path) -> list[tuple[str, bool]]:
    return sorted((str(p.relative_to(path)), p.is_symlink()) for p in path.rglob("*"))


@pytest.mark.parametrize("how", ["absolute, outside the root", "absolute, inside the root",
                                 "relative, inside the root", "relative, climbing out"])  # fmt: skip
def test_a_symlinked_certs_d_is_refused_naming_it_and_nothing_is_removed(
    tmp_path: Path, how: str
) -> None:
    root = tmp_path / "root"
    outside = _outside(tmp_path)
    pki = root / "etc/pki/tls"
    (pki / "stale.example.com").mkdir(parents=True)
    (root / "etc/docker").mkdir(parents=True)
    target = {
        "absolute, outside the root": str(outside),
        "absolute, inside the root": "/etc/pki/tls",
        "relative, inside the root": "../pki/tls",
        "relative, climbing out": "../../../outside",
    }[how]
    (root / "etc/docker/certs.d").symlink_to(target)
    before = _tree(tmp_path)
    with pytest.raises(HostError, match=r"^refusing to manage /etc/docker/certs\.d: ") as e:
        write_certificates(Root(root), certificate_files(controller_config()))
    assert f'it is a symlink (to "{target}"), not a directory of its own' in str(e.value)
    after = _tree(tmp_path)
    assert [p for p in before if p not in after] == []  # nothing removed, here or outside
    assert after == before  # nothing written either: refused before the first write


def test_a_symlinked_registry_directory_is_refused_and_a_stale_one_removed_in_place(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    outside = _outside(tmp_path)
    certs_d = root / "etc/docker/certs.d"
    certs_d.mkdir(parents=True)
    (certs_d / "old.example.com").mkdir()
    (certs_d / "old.example.com/escape").symlink_to(outside)  # a link inside a stale dir
    (certs_d / "gone-link").symlink_to(outside / "stale.example.com")  # a stale symlink entry
    (certs_d / "quay.io").symlink_to("../../pki")
    with pytest.raises(HostError, match=r'"/etc/docker/certs\.d/quay\.io" is a symlink'):
        write_certificates(Root(root), certificate_files(controller_config()))
    assert not (root / "etc/kubernetes").exists()  # refused before the first write
    assert (outside / "stale.example.com/ca.crt").read_bytes() == CA_A  # not where it led
    assert (outside / "keep").exists() and (certs_d / "gone-link").is_symlink()
    assert not (root / "etc/pki").exists()  # no ca.crt written through quay.io's link


@pytest.mark.parametrize("name", ["reg\x00istry", "a/b", "..", ""])
def test_a_registry_ca_name_no_directory_can_have_is_refused_when_parsed(name: str) -> None:
    cc = controller_config(imageRegistryBundleData=[{"file": name, "data": b64(CA_B)}])
    with pytest.raises(ConfigParseError, match=r"invalid registry CA file name ") as e:
        certificate_files(cc)
    assert str(e.value).isprintable()  # the NUL is shown escaped, as Go's %q does
    if "\x00" in name:
        assert '"reg\\x00istry"' in str(e.value)


KEY = b"-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIHZ5\n-----END PRIVATE KEY-----\n"


@pytest.mark.parametrize(
    ("field", "data", "why"),
    [
        ("kubeAPIServerServingCAData", b"", "empty certificate bundle"),
        ("kubeAPIServerServingCAData", b"not a certificate\n", "no PEM block"),
        ("kubeAPIServerServingCAData", KEY, 'block 1 is a "PRIVATE KEY"'),
        ("kubeAPIServerServingCAData", CA_B + b"-----BEGIN CERTIFICATE-----\nAA", "malformed"),
        ("cloudProviderCAData", b"-----BEGIN CERTIFICATE-----\nMIIBAAAA\n-----END CERTIFICATE-----",
         "block 1: truncated element"),
    ],
)  # fmt: skip
def test_a_bundle_that_is_not_pem_certificates_never_replaces_a_good_one(
    tmp_path: Path, field: str, data: bytes, why: str
) -> None:
    good = tmp_path / "etc/kubernetes/kubelet-ca.crt"
    good.parent.mkdir(parents=True)
    good.write_bytes(CA_A + b"\n")
    with pytest.raises(ConfigParseError, match=rf"^spec\.{field}: .*not PEM certificates") as e:
        write_certificates(
            Root(tmp_path), certificate_files(controller_config(**{field: b64(data)}))
        )
    assert why in str(e.value)
    assert good.read_bytes() == CA_A + b"\n"
    assert "MC4CAQAw" not in str(e.value)  # never quoted


def test_a_registry_ca_that_is_not_a_certificate_is_refused() -> None:
    cc = controller_config(imageRegistryBundleUserData=[{"file": "r", "data": b64(b"x")}])
    with pytest.raises(ConfigParseError, match=r"imageRegistryBundleUserData\[0\]\.data: "):
        certificate_files(cc)


def test_several_certificates_with_comments_between_are_one_good_bundle() -> None:
    bundle = b"# lb signer\n" + CA_A + b"\n\n# localhost signer\n" + CA_B
    certs = certificate_files(controller_config(kubeAPIServerServingCAData=b64(bundle)))
    assert certs.bundles["/etc/kubernetes/kubelet-ca.crt"] == bundle


def test_a_stale_registry_directory_goes_without_following_a_link_inside_it(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    outside = _outside(tmp_path)
    certs_d = root / "etc/docker/certs.d"
    (certs_d / "old.example.com").mkdir(parents=True)
    (certs_d / "old.example.com/escape").symlink_to(outside)
    (certs_d / "old.example.com/abs").symlink_to("/etc")  # the node's /etc, if followed
    write_certificates(Root(root), certificate_files(controller_config()))
    assert not (certs_d / "old.example.com").exists()
    assert _tree(outside) == [("keep", False), ("stale.example.com", False),
                              ("stale.example.com/ca.crt", False)]  # fmt: skip
    assert (certs_d / "quay.io/ca.crt").read_bytes() == CA_B
