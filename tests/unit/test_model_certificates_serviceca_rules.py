"""The service-CA rotation (upstream ``syncControllerConfigHandler``): the ConfigMap read as
``cmToData`` reads it, the kubeconfig refused naming the file and never its data, upstream's
log lines in order, and when the kubelet restarts."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
import yaml

from mcd.model.certificates.serviceca import (
    KUBECONFIG,
    LAST_OBSERVED_SERVER_CA,
    NO_PEM,
    SERVICE_CA_ROTATE,
    configmap_data,
    load_kubeconfig,
    plan_ca_rotation,
    should_rotate,
    with_ca_data,
)
from mcd.model.errors import ConfigParseError

CERTS = Path(__file__).resolve().parents[1] / "data" / "certs"
OLD = (CERTS / "openshift-service-serving-signer-1700000000.pem").read_bytes()
NEW = (CERTS / "openshift-service-serving-signer-1800000000.pem").read_bytes()
LB = (CERTS / "kube-apiserver-lb-signer.pem").read_bytes()
KEY = "ca-bundle.crt"
NOT_FOUND = '"Cert not found in kubeconfig. This means we need to write to disk. Subject is: {}"'


def kubeconfig(ca: bytes, **cluster: Any) -> bytes:
    entry = {
        "server": "https://api:6443",
        "certificate-authority-data": base64.b64encode(ca).decode(),
        **cluster,
    }
    return yaml.safe_dump({"apiVersion": "v1", "clusters": [{"name": "c", "cluster": entry}]}).encode()  # fmt: skip


def test_binary_data_wins_over_data_and_text_that_is_not_base64_is_kept() -> None:
    b64 = base64.b64encode(b"binary").decode()
    cm = {"binaryData": {KEY: b64}, "data": {KEY: "text"}}
    assert configmap_data(cm, KEY) == b"binary"
    assert configmap_data({"binaryData": {KEY: "not base64!"}}, KEY) == b"not base64!"
    assert configmap_data({"binaryData": {"other": b64}, "data": {KEY: "t"}}, KEY) == b"t"
    assert configmap_data({"binaryData": [], "data": {KEY: b64}}, KEY) == b"binary"


@pytest.mark.parametrize(
    ("cm", "where"),
    [
        ({"metadata": {"namespace": "ns", "name": "kc"}, "data": {"other": "x"}}, "ns/kc"),
        ({"data": ["x"], "binaryData": {KEY: 5}}, "/"),
        ("not a configmap", "/"),
    ],
)
def test_a_missing_key_names_the_configmap(cm: Any, where: str) -> None:
    with pytest.raises(KeyError) as e:
        configmap_data(cm, KEY)
    assert e.value.args[0] == f"{KEY} not found in {where}"


def test_rotation_only_for_the_exact_value_true() -> None:
    assert not should_rotate({SERVICE_CA_ROTATE: "True"}, {})
    assert should_rotate({SERVICE_CA_ROTATE: "true"}, {LAST_OBSERVED_SERVER_CA: ""})


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"- a\n- b\n", "could not unmarshal kubeconfig: not a mapping"),
        (b"apiVersion: v1\n", "clusters cannot be nil"),
        (b"clusters: {}\n", "clusters cannot be nil"),
        (b"clusters: [name]\n", "clusters cannot be nil"),
        (b"clusters:\n- cluster: [1]\n", "clusters[0].cluster is not a mapping"),
        (b"apiVersion: v1\nclusters:\n- {\n", "could not unmarshal kubeconfig at line 4"),
    ],
)
def test_an_unusable_kubeconfig_is_refused_naming_the_file(data: bytes, message: str) -> None:
    with pytest.raises(ConfigParseError) as e:
        load_kubeconfig(data, "/var/lib/kubelet/kubeconfig")
    assert (e.value.field, e.value.detail) == ("/var/lib/kubelet/kubeconfig", message)


def test_a_cluster_without_fields_gets_the_ca_data() -> None:
    doc = load_kubeconfig(b"clusters:\n- name: c\n", KUBECONFIG)
    out = yaml.safe_load(with_ca_data(doc, b"CA"))
    assert out == {"clusters": [{"name": "c", "cluster": {
        "certificate-authority-data": base64.b64encode(b"CA").decode()}}]}  # fmt: skip


# Go's strings.SplitAfter leaves an empty piece after the last certificate: upstream's first
# pass logs that it is no PEM block and stops there, so NO_PEM comes first in every run.


def test_a_new_ca_logs_upstreams_lines_in_order_and_restarts_the_kubelet() -> None:
    plan = plan_ca_rotation(kubeconfig(OLD), OLD + NEW)
    assert plan.messages == [
        NO_PEM,
        NOT_FOUND.format("openshift-service-serving-signer@1800000000"),
        '"Need to restart kubelet"',
        "Writing new Data to /etc/kubernetes/kubeconfig",
    ]
    assert (plan.restart_kubelet, plan.defer_kubelet_restart) == (True, False)
    assert plan.ca_data.strip() == (OLD + NEW).strip()


def test_a_self_rotating_signer_with_a_real_ca_still_restarts() -> None:
    plan = plan_ca_rotation(kubeconfig(OLD), OLD + LB + NEW)
    assert plan.messages == [
        NO_PEM,
        NOT_FOUND.format("kube-apiserver-lb-signer"),
        '"Skipping kubelet restart"',
        NOT_FOUND.format("openshift-service-serving-signer@1800000000"),
        '"Need to restart kubelet"',
        "Writing new Data to /etc/kubernetes/kubeconfig",
    ]
    assert plan.restart_kubelet
    only_signer = plan_ca_rotation(kubeconfig(OLD), OLD + LB)
    assert (only_signer.restart_kubelet, only_signer.defer_kubelet_restart) == (False, True)
    assert only_signer.kubeconfig is not None


def test_nothing_new_keeps_the_kubeconfig_and_defers() -> None:
    plan = plan_ca_rotation(kubeconfig(OLD + NEW), OLD + NEW)
    assert (plan.kubeconfig, plan.restart_kubelet, plan.defer_kubelet_restart) == (
        None,
        False,
        True,
    )
    assert plan.messages == [NO_PEM]
    assert plan.ca_data == OLD + NEW


def test_text_after_the_last_certificate_is_no_pem_block_and_ends_each_pass() -> None:
    plan = plan_ca_rotation(kubeconfig(OLD), OLD + NEW + b"junk that is no certificate\n")
    assert plan.messages == [
        NO_PEM,
        NOT_FOUND.format("openshift-service-serving-signer@1800000000"),
        '"Need to restart kubelet"',
        NO_PEM,
        "Writing new Data to /etc/kubernetes/kubeconfig",
    ]
    assert plan.ca_data.count(b"BEGIN CERTIFICATE") == 2 and b"junk" not in plan.ca_data
    assert plan.restart_kubelet


def test_a_malformed_added_certificate_is_named_by_its_place_in_the_bundle() -> None:
    bad = b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"
    plan = plan_ca_rotation(kubeconfig(OLD + NEW), OLD + NEW + bad)
    malformed = (
        '"Malformed Cert, not syncing: certificate 3 of ca-bundle.crt: malformed certificate"'
    )
    # upstream's two passes each log it
    assert plan.messages == [
        malformed, NO_PEM, malformed, "Writing new Data to /etc/kubernetes/kubeconfig"
    ]  # fmt: skip
    assert plan.kubeconfig is not None  # the bundle differs and adds a piece
    assert plan.ca_data.count(b"BEGIN CERTIFICATE") == 2
    assert not plan.restart_kubelet
