"""The service-CA rotation's decisions (upstream ``syncControllerConfigHandler``, ``cmToData``)
and the PEM/X.509 reading it needs (Go ``pem.Decode``, ``x509.ParseCertificate``)."""

from __future__ import annotations

import base64
import contextlib
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from mcd.model.certificates.serviceca import (
    LAST_OBSERVED_SERVER_CA,
    SERVICE_CA_ROTATE,
    configmap_data,
    plan_ca_rotation,
    should_rotate,
)
from mcd.model.certificates.x509 import common_name, pem_decode
from mcd.model.errors import ConfigParseError

CERTS = Path(__file__).resolve().parents[1] / "data" / "certs"
OLD = (CERTS / "openshift-service-serving-signer-1700000000.pem").read_bytes()
NEW = (CERTS / "openshift-service-serving-signer-1800000000.pem").read_bytes()
LB = (CERTS / "kube-apiserver-lb-signer.pem").read_bytes()
LOCALHOST = (CERTS / "kube-apiserver-localhost-signer.pem").read_bytes()


def kubeconfig(ca: bytes) -> bytes:
    return yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "c", "cluster": {
            "server": "https://api:6443", "certificate-authority-data": base64.b64encode(ca).decode(),
            "tls-server-name": "api"}}],
        "users": [{"name": "u", "user": {"token": "t"}}], "preferences": {},
    }).encode()  # fmt: skip


def ca_of(doc: bytes) -> bytes:
    return base64.b64decode(
        yaml.safe_load(doc)["clusters"][0]["cluster"]["certificate-authority-data"]
    )


def test_subjects_of_real_certificates() -> None:
    block = pem_decode(b"junk before\n" + NEW)
    assert block is not None and block.type == "CERTIFICATE"
    assert common_name(block.data) == "openshift-service-serving-signer@1800000000"
    assert pem_decode(b"") is None and pem_decode(b"-----END CERTIFICATE-----") is None


@given(st.binary(max_size=300))
def test_any_der_is_a_name_or_a_value_error(der: bytes) -> None:
    with contextlib.suppress(ValueError):
        assert isinstance(common_name(der), str)


@given(st.integers(min_value=0, max_value=len(OLD) - 1), st.integers(0, 255))
def test_a_flipped_byte_is_never_a_crash(at: int, value: int) -> None:
    der = pem_decode(OLD)
    assert der is not None
    data = bytearray(der.data)
    data[at % len(data)] = value
    with contextlib.suppress(ValueError):
        common_name(bytes(data))


def test_configmap_data_as_upstream_cmToData() -> None:
    b64 = base64.b64encode(NEW).decode()
    assert configmap_data({"binaryData": {"ca-bundle.crt": b64}}, "ca-bundle.crt") == NEW
    assert configmap_data({"data": {"ca-bundle.crt": b64}}, "ca-bundle.crt") == NEW  # base64
    assert configmap_data({"data": {"ca-bundle.crt": NEW.decode()}}, "ca-bundle.crt") == NEW
    with pytest.raises(KeyError, match=r"ca-bundle\.crt not found in ns/kubeconfig-data"):
        configmap_data(
            {"metadata": {"namespace": "ns", "name": "kubeconfig-data"}}, "ca-bundle.crt"
        )


def test_rotation_only_when_asked_and_not_yet_observed() -> None:
    assert should_rotate({SERVICE_CA_ROTATE: "true"}, {})
    assert should_rotate({SERVICE_CA_ROTATE: "true"}, {LAST_OBSERVED_SERVER_CA: "false"})
    assert not should_rotate({SERVICE_CA_ROTATE: "true"}, {LAST_OBSERVED_SERVER_CA: "true"})
    assert not should_rotate({SERVICE_CA_ROTATE: "false"}, {})
    assert not should_rotate({}, {})


def test_a_new_service_ca_rewrites_the_ca_data_keeps_the_rest_and_restarts_the_kubelet() -> None:
    before = kubeconfig(OLD)
    plan = plan_ca_rotation(before, OLD + NEW)
    assert plan.kubeconfig is not None and plan.restart_kubelet
    assert ca_of(plan.kubeconfig).strip() == (OLD + NEW).strip()
    after, was = yaml.safe_load(plan.kubeconfig), yaml.safe_load(before)
    after["clusters"][0]["cluster"].pop("certificate-authority-data")
    was["clusters"][0]["cluster"].pop("certificate-authority-data")
    assert after == was  # everything else kept
    assert any(
        "Subject is: openshift-service-serving-signer@1800000000" in m for m in plan.messages
    )
    assert '"Need to restart kubelet"' in plan.messages
    assert not any("MII" in m for m in plan.messages)


@pytest.mark.parametrize("signer", [LB, LOCALHOST])
def test_self_rotating_signers_are_written_without_a_restart(signer: bytes) -> None:
    plan = plan_ca_rotation(kubeconfig(OLD), OLD + signer)
    assert plan.kubeconfig is not None and not plan.restart_kubelet  # deferKubeletRestart
    assert '"Skipping kubelet restart"' in plan.messages


def test_nothing_added_nothing_written() -> None:
    plan = plan_ca_rotation(kubeconfig(OLD + NEW), OLD + NEW)
    assert plan.kubeconfig is None and not plan.restart_kubelet
    # a bundle that only drops a CA differs, but adds nothing: upstream writes nothing either
    plan = plan_ca_rotation(kubeconfig(OLD + NEW), OLD)
    assert plan.kubeconfig is None and not plan.restart_kubelet
    # upstream compares the pieces strings.SplitAfter makes, the newline before a second
    # certificate included: the same CA moved to the front counts as added
    plan = plan_ca_rotation(kubeconfig(OLD + NEW), NEW)
    assert plan.kubeconfig is not None and plan.restart_kubelet


def test_malformed_certificates_are_left_out() -> None:
    bad = b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"
    plan = plan_ca_rotation(kubeconfig(OLD), OLD + bad + NEW)
    assert plan.kubeconfig is not None
    assert ca_of(plan.kubeconfig).count(b"BEGIN CERTIFICATE") == 2
    malformed = [m for m in plan.messages if m.startswith('"Malformed Cert, not syncing')]
    assert malformed[0] == (
        '"Malformed Cert, not syncing: certificate 2 of ca-bundle.crt: malformed certificate"'
    )


def test_an_unusable_kubeconfig_names_the_file_never_the_data() -> None:
    with pytest.raises(ConfigParseError) as e:
        plan_ca_rotation(b"clusters: [\n token-xyz\n", OLD)
    assert str(e.value).startswith("/etc/kubernetes/kubeconfig: could not unmarshal kubeconfig")
    assert "token-xyz" not in str(e.value)
    with pytest.raises(ConfigParseError, match="clusters cannot be nil"):
        plan_ca_rotation(b"apiVersion: v1\nclusters: []\n", OLD)
    doc = b"clusters:\n- cluster:\n    certificate-authority-data: '%%%'\n"
    with pytest.raises(ConfigParseError, match="certificate-authority-data: invalid base64"):
        plan_ca_rotation(doc, OLD)
