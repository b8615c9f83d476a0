"""What the certificate writer puts on a node, read from the ControllerConfig (upstream
``syncControllerConfigHandler``): which file gets which bundle, the registry directory names,
writeToDisk's trailing newline, and the fields named when the document is bad."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcd.model.certificates.certs import certificate_files, registry_dir
from mcd.model.errors import ConfigParseError
from mcd.model.vocabulary import CLOUD_CA_BUNDLE, KUBELET_CA

CERTS = Path(__file__).resolve().parents[1] / "data" / "certs"
CA = (CERTS / "kube-apiserver-lb-signer.pem").read_bytes().rstrip(b"\n")  # no final newline
OTHER = (CERTS / "kube-apiserver-localhost-signer.pem").read_bytes()  # real ones: only PEM passes


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def controller_config(**spec: Any) -> dict[str, Any]:
    """A ControllerConfig; with a kubelet CA unless the test gives one (an empty bundle is
    refused: it would replace a good CA and break the kubelet's next start)."""
    spec.setdefault("kubeAPIServerServingCAData", b64(OTHER))
    return {
        "kind": "ControllerConfig",
        "metadata": {"name": "machine-config-controller", "resourceVersion": "42"},
        "spec": spec,
    }


def test_the_kubelet_ca_always_gets_a_file_ending_in_one_newline() -> None:
    assert certificate_files(controller_config(kubeAPIServerServingCAData=b64(CA))).bundles == {
        KUBELET_CA: CA + b"\n"
    }
    # data already ending in a newline is written as is, not with a second one
    assert certificate_files(controller_config(kubeAPIServerServingCAData=b64(OTHER))).bundles == {
        KUBELET_CA: OTHER
    }
    # no data: upstream writes an empty kubelet CA file; mcd refuses it (stricter than upstream)
    with pytest.raises(ConfigParseError, match="empty certificate bundle: not PEM certificates"):
        certificate_files(controller_config(kubeAPIServerServingCAData=""))


def test_the_cloud_ca_bundle_is_written_only_when_the_cluster_has_one() -> None:
    with_cloud = certificate_files(controller_config(cloudProviderCAData=b64(CA)))
    assert with_cloud.bundles[CLOUD_CA_BUNDLE] == CA + b"\n"
    assert CLOUD_CA_BUNDLE not in certificate_files(controller_config()).bundles
    assert (
        CLOUD_CA_BUNDLE not in certificate_files(controller_config(cloudProviderCAData="")).bundles
    )


def test_registry_cas_go_under_a_directory_per_registry_with_dots_read_as_a_port() -> None:
    certs = certificate_files(
        controller_config(
            imageRegistryBundleData=[
                {"file": "quay.io", "data": b64(CA)},
                {"file": "registry.local..5000", "data": b64(OTHER)},
            ]
        )
    )
    # the bytes as given: no newline added to registry CAs (only the bundles get one)
    assert certs.registry_cas == {"quay.io": CA, "registry.local:5000": OTHER}


def test_the_users_registry_ca_replaces_the_clusters_for_the_same_registry() -> None:
    certs = certificate_files(
        controller_config(
            imageRegistryBundleData=[{"file": "quay.io", "data": b64(CA)}],
            imageRegistryBundleUserData=[{"file": "quay.io", "data": b64(OTHER)}],
        )
    )
    assert certs.registry_cas == {"quay.io": OTHER}


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "../etc"])
def test_a_registry_ca_file_name_that_is_not_one_directory_is_refused(name: str) -> None:
    doc = controller_config(
        imageRegistryBundleData=[{"file": "ok", "data": b64(CA)}],
        imageRegistryBundleUserData=[{"file": name, "data": b64(CA)}],
    )
    with pytest.raises(ConfigParseError, match="invalid registry CA file name") as e:
        certificate_files(doc)
    assert e.value.field == "spec.imageRegistryBundleUserData[0]"


def test_a_registry_ca_without_a_file_name_is_refused() -> None:
    with pytest.raises(ConfigParseError) as e:
        certificate_files(controller_config(imageRegistryBundleData=[{"data": b64(CA)}]))
    assert e.value.field == "spec.imageRegistryBundleData[0]"


def test_bad_base64_names_the_field() -> None:
    with pytest.raises(ConfigParseError, match="invalid base64 data") as e:
        certificate_files(
            controller_config(imageRegistryBundleData=[{"file": "quay.io", "data": "not base64!"}])
        )
    assert e.value.field == "spec.imageRegistryBundleData[0].data"
    with pytest.raises(ConfigParseError) as e:
        certificate_files(controller_config(cloudProviderCAData="%%%"))
    assert e.value.field == "spec.cloudProviderCAData"


def test_the_pull_secret_is_written_only_when_the_field_is_there() -> None:
    secret = b'{"auths":{}}'
    assert certificate_files(controller_config()).pull_secret is None
    certs = certificate_files(controller_config(internalRegistryPullSecret=b64(secret)))
    assert certs.pull_secret == secret + b"\n"
    assert certificate_files(controller_config(internalRegistryPullSecret="")).pull_secret == b""


def test_the_resource_version_is_kept_to_notice_the_next_rotation() -> None:
    assert certificate_files(controller_config()).resource_version == "42"
    no_version = {"spec": {"kubeAPIServerServingCAData": b64(CA)}}
    assert certificate_files(no_version).resource_version == ""


def test_a_controller_config_that_is_not_an_object_is_a_parse_error() -> None:
    with pytest.raises(ConfigParseError):
        certificate_files(["not", "a", "map"])
    with pytest.raises(ConfigParseError) as e:
        certificate_files(controller_config(imageRegistryBundleData="quay.io"))
    assert e.value.field == "spec.imageRegistryBundleData"


@given(st.text(alphabet="ab.:5-", max_size=20))
def test_registry_dir_reads_every_double_dot_as_a_colon(name: str) -> None:
    out = registry_dir(name)
    assert ".." not in out  # a run of dots: pairs become colons, an odd one stays a dot
    assert out.count(":") == name.count(":") + name.count("..")
    assert len(out) == len(name) - name.count("..")
    if ".." not in name:
        assert out == name
