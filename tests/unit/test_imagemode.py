"""Image mode's pure part (issue 17): upstream's embed/extract of the image in the
MachineConfig, and the gate on image references (hostile input)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcd.model import gate
from mcd.model.machineconfig import load_machine_config
from mcd.model.osupdate.extensions import not_installed, package_sets
from mcd.model.osupdate.imagemode import (
    OCL_OS_IMAGE_URL,
    ORIGINAL_OS_IMAGE_URL,
    embed,
    extract,
    reference_problem,
    reference_refusal,
)
from tests.builders import mc, mc_doc

BASE = "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:" + "1" * 64
OCL = "image-registry.openshift-image-registry.svc:5000/ns/os-image@sha256:" + "2" * 64


def test_embed_records_the_original_and_makes_the_image_the_os_image_url() -> None:
    doc = json.dumps(mc_doc("rendered-worker-2", osImageURL=BASE)).encode()
    embedded = embed(doc, OCL)
    obj = json.loads(embedded)
    assert obj["spec"]["osImageURL"] == OCL
    assert obj["metadata"]["annotations"] == {ORIGINAL_OS_IMAGE_URL: BASE, OCL_OS_IMAGE_URL: OCL}
    parsed = load_machine_config(embedded)
    assert (parsed.os_image_url, parsed.ocl_image) == (OCL, OCL)
    config, image = extract(embedded)
    assert image == OCL
    assert json.loads(config) == json.loads(doc)  # the config as the cluster has it


def test_no_image_leaves_the_bytes_alone() -> None:
    doc = json.dumps(mc_doc("rendered-worker-2", osImageURL=BASE)).encode()
    assert embed(doc, "") is doc
    assert extract(doc) == (doc, "")
    assert load_machine_config(doc).ocl_image == ""


def test_embedding_twice_keeps_the_config_s_own_url() -> None:
    doc = json.dumps(mc_doc("r", osImageURL=BASE)).encode()
    again = embed(embed(doc, OCL), OCL.replace("2", "3"))
    config, image = extract(again)
    assert json.loads(config)["spec"]["osImageURL"] == BASE
    assert image == OCL.replace("2", "3")


@pytest.mark.parametrize(
    "value",
    [
        BASE,
        OCL,
        "quay.io/a/b:latest",
        "localhost:5000/x",
        "registry.example.com/a/b:v1@sha256:" + "f" * 64,
    ],
)
def test_registry_pullspecs_pass(value: str) -> None:
    assert reference_problem(value) is None


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("", "is empty"),
        ("--install=evil", "starts with '-'"),
        ("docker://quay.io/a/b", 'has its own transport "docker://"; give a registry pullspec'),
        ("containers-storage:quay.io/a", 'has its own transport "containers-storage:"; give a registry pullspec'),
        ("ostree-unverified-registry:quay.io/a", 'has its own transport "ostree-unverified-registry:"; give a registry pullspec'),
        ("quay.io/a\n--x", "contains the control character U+000A at offset 9"),
        ("quay.io/a b", "is not a registry pullspec ([host[:port]/]path[:tag][@digest])"),
        ("quay.io/a@sha256:12", "is not a registry pullspec ([host[:port]/]path[:tag][@digest])"),
    ],
)  # fmt: skip
def test_hostile_references_are_refused_naming_why(value: str, why: str) -> None:
    assert reference_problem(value) == why
    refusal = reference_refusal(
        "node annotation machineconfiguration.openshift.io/desiredImage", value
    )
    assert refusal is not None and refusal.endswith(why) and "\n" not in refusal


@given(st.text(max_size=80))
def test_any_text_is_judged_without_error_and_a_passing_one_is_one_plain_argument(
    value: str,
) -> None:
    if reference_problem(value) is None:
        assert value and not value.startswith("-") and value.isprintable() and " " not in value
        assert "://" not in value


def test_the_gate_refuses_an_extensions_image_with_a_transport_or_an_option() -> None:
    config = mc("rendered-worker-2", extensions=["usbguard"],
                baseOSExtensionsContainerImage="-v=/:/host")  # fmt: skip
    assert gate.problems(config) == [
        "spec.baseOSExtensionsContainerImage: invalid image reference \"-v=/:/host\": starts with '-'"
    ]
    config = mc("rendered-worker-2", osImageURL="docker://quay.io/os")
    assert gate.problems(config) == [
        'spec.osImageURL: invalid image reference "docker://quay.io/os": has its own transport '
        '"docker://"; give a registry pullspec'
    ]


def test_extension_package_sets_accept_upstreams_legacy_ipsec_set_and_word_a_miss() -> None:
    assert package_sets("ipsec") == [
        ("NetworkManager-libreswan", "libreswan", "openvswitch3.5-ipsec"),
        ("NetworkManager-libreswan", "libreswan"),
    ]
    assert package_sets("usbguard") == [("usbguard",)]
    assert package_sets("no-such") == []
    assert not_installed("ipsec", [["openvswitch3.5-ipsec"], ["libreswan"]]) == (
        'extension "ipsec" verification failed: no valid package set is fully installed. '
        "Tried 2 package set(s), missing packages per set: [[openvswitch3.5-ipsec] [libreswan]]"
    )
