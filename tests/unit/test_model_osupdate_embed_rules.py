"""Image mode's image embedded in and taken out of the on-disk MachineConfig
(model/osupdate/imagemode): the document written with sorted keys, a round trip back to what
the cluster has, and a reference's length bound."""

from __future__ import annotations

import json

from mcd.model.osupdate.imagemode import (
    MAX_REFERENCE,
    OCL_OS_IMAGE_URL,
    ORIGINAL_OS_IMAGE_URL,
    argument_problem,
    embed,
    extract,
)

IMAGE = "quay.io/x/os@sha256:" + "a" * 64


def test_embedding_writes_sorted_keys_and_extracting_restores_the_document() -> None:
    doc = {"spec": {"osImageURL": "quay.io/base:1", "config": {}}, "kind": "MachineConfig",
           "metadata": {"name": "r", "annotations": {"z": "1"}}}  # fmt: skip
    raw = json.dumps(doc).encode()
    embedded = embed(raw, IMAGE)
    assert embedded == json.dumps(json.loads(embedded), sort_keys=True).encode()
    got = json.loads(embedded)
    assert got["spec"]["osImageURL"] == IMAGE
    assert got["metadata"]["annotations"] == {
        "z": "1", OCL_OS_IMAGE_URL: IMAGE, ORIGINAL_OS_IMAGE_URL: "quay.io/base:1"
    }  # fmt: skip
    back, image = extract(embedded)
    assert image == IMAGE
    assert back == json.dumps(doc, sort_keys=True).encode()


def test_a_document_without_metadata_or_spec_gains_them() -> None:
    got = json.loads(embed(b'{"kind": "MachineConfig"}', IMAGE))
    assert got == {"kind": "MachineConfig", "spec": {"osImageURL": IMAGE},
                   "metadata": {"annotations": {OCL_OS_IMAGE_URL: IMAGE,
                                                ORIGINAL_OS_IMAGE_URL: ""}}}  # fmt: skip
    back, image = extract(json.dumps(got).encode())
    assert (json.loads(back), image) == (
        {"kind": "MachineConfig", "spec": {}, "metadata": {}},
        IMAGE,
    )


def test_extracting_from_a_document_with_only_the_original_mark() -> None:
    doc = {"metadata": {"annotations": {ORIGINAL_OS_IMAGE_URL: "quay.io/base:1"}}, "spec": {}}
    back, image = extract(json.dumps(doc).encode())
    assert image == ""
    assert json.loads(back) == {"metadata": {}, "spec": {"osImageURL": "quay.io/base:1"}}


def test_a_reference_is_bounded_at_4096_characters() -> None:
    assert argument_problem("q/" + "a" * (MAX_REFERENCE - 2)) is None
    assert argument_problem("q/" + "a" * (MAX_REFERENCE - 1)) == "is longer than 4096 characters"
