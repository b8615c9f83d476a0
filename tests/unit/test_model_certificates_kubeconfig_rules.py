"""The kubeconfig the service-CA rotation writes and the ConfigMap it reads, at their edges
(model/certificates/serviceca): the file keeps its order and block style, odd ConfigMaps and
bundles are read without a crash, and an unreadable kubeconfig names only the file."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
import yaml

from mcd.model.certificates.serviceca import (
    NO_PEM,
    configmap_data,
    load_kubeconfig,
    plan_ca_rotation,
    with_ca_data,
)
from mcd.model.errors import ConfigParseError

CERTS = Path(__file__).resolve().parents[1] / "data" / "certs"
OLD = (CERTS / "openshift-service-serving-signer-1700000000.pem").read_bytes()
KEY = "ca-bundle.crt"


def test_the_written_kubeconfig_keeps_its_key_order_and_block_style() -> None:
    doc = {"kind": "Config", "apiVersion": "v1",
           "clusters": [{"name": "c", "cluster": {"server": "s"}}]}  # fmt: skip
    assert with_ca_data(doc, b"X") == (
        b"kind: Config\napiVersion: v1\nclusters:\n- name: c\n  cluster:\n    server: s\n"
        b"    certificate-authority-data: WA==\n"
    )


def test_text_that_only_looks_like_base64_once_cleaned_is_kept_as_text() -> None:
    assert configmap_data({"binaryData": {KEY: "ab-cd"}}, KEY) == b"ab-cd"
    assert configmap_data({"data": {KEY: "ab-cd"}}, KEY) == b"ab-cd"
    assert configmap_data({"data": {KEY: OLD.decode()}}, KEY) == OLD


def test_binary_data_that_is_not_a_mapping_is_passed_over() -> None:
    b64 = base64.b64encode(b"ca").decode()
    assert configmap_data({"binaryData": ["x"], "data": {KEY: b64}}, KEY) == b"ca"


def test_an_unreadable_kubeconfig_without_a_line_names_the_file_only() -> None:
    with pytest.raises(ConfigParseError) as e:
        load_kubeconfig(b"a: \x01", "/etc/kubernetes/kubeconfig")
    assert str(e.value) == "/etc/kubernetes/kubeconfig: could not unmarshal kubeconfig"


def test_a_bundle_with_bytes_that_are_not_utf8_is_read_not_crashed_on() -> None:
    config = yaml.safe_dump({"clusters": [{"name": "c", "cluster": {
        "certificate-authority-data": base64.b64encode(OLD).decode()}}]}).encode()  # fmt: skip
    got = plan_ca_rotation(config, OLD + b"\xff\xfe trailing")
    assert NO_PEM in got.messages
    assert not got.restart_kubelet
    assert b"\xff" not in got.ca_data
