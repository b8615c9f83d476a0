"""Image mode's round trip through the config (upstream ``embedOCLImageInMachineConfig`` and
``extractOCLImageFromMachineConfig``): the image carried in two annotations and osImageURL,
and the config as the cluster has it given back, other annotations untouched."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcd.model.osupdate.imagemode import OCL_OS_IMAGE_URL, ORIGINAL_OS_IMAGE_URL, embed, extract

IMAGE = "quay.io/example/layered@sha256:" + "a" * 64
BASE = "quay.io/openshift/rhcos@sha256:" + "b" * 64


def doc(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "rendered-1", "annotations": {"keep": "me"}}, "spec": spec}


def as_bytes(obj: object) -> bytes:
    return json.dumps(obj).encode()


def test_embedding_records_the_original_and_extracting_gives_it_back() -> None:
    original = doc(osImageURL=BASE, fips=False)
    embedded = json.loads(embed(as_bytes(original), IMAGE))
    assert embedded["spec"] == {"osImageURL": IMAGE, "fips": False}
    assert embedded["metadata"]["annotations"] == {
        "keep": "me",
        ORIGINAL_OS_IMAGE_URL: BASE,
        OCL_OS_IMAGE_URL: IMAGE,
    }
    back, image = extract(json.dumps(embedded).encode())
    assert image == IMAGE
    assert json.loads(back) == original


def test_a_config_without_an_os_image_gets_none_back() -> None:
    embedded = embed(as_bytes({"metadata": {}, "spec": {}}), IMAGE)
    assert json.loads(embedded)["metadata"]["annotations"][ORIGINAL_OS_IMAGE_URL] == ""
    back, image = extract(embedded)
    assert image == IMAGE
    assert json.loads(back) == {"metadata": {}, "spec": {}}  # no osImageURL, no annotations


def test_a_document_with_null_annotations_or_no_spec_still_carries_the_image() -> None:
    embedded = json.loads(embed(as_bytes({"metadata": {"annotations": None}}), IMAGE))
    assert embedded["spec"] == {"osImageURL": IMAGE}
    assert embedded["metadata"]["annotations"][OCL_OS_IMAGE_URL] == IMAGE


def test_only_the_ocl_annotation_is_enough_to_extract() -> None:
    only_image = {
        "metadata": {"annotations": {OCL_OS_IMAGE_URL: IMAGE}},
        "spec": {"osImageURL": IMAGE},
    }
    back, image = extract(as_bytes(only_image))
    assert image == IMAGE
    assert json.loads(back) == {"metadata": {}, "spec": {}}
    only_original = {"metadata": {"annotations": {ORIGINAL_OS_IMAGE_URL: BASE}}}
    back, image = extract(as_bytes(only_original))
    assert (json.loads(back), image) == ({"metadata": {}, "spec": {"osImageURL": BASE}}, "")


@pytest.mark.parametrize(
    "document",
    [
        b"not json",
        as_bytes(["a", "list"]),
        as_bytes({"metadata": "x"}),
        as_bytes({"metadata": {"annotations": ["x"]}}),
        as_bytes({"metadata": {"annotations": {"other": "x"}}, "spec": {}}),
        as_bytes({"metadata": {"annotations": {OCL_OS_IMAGE_URL: IMAGE}}, "spec": "x"}),
    ],
)
def test_a_document_without_an_image_comes_back_unchanged(document: bytes) -> None:
    assert extract(document) == (document, "")


@pytest.mark.parametrize(
    "document",
    [b"not json", as_bytes({"metadata": []}), as_bytes({"spec": []}), as_bytes([1])],
)
def test_embedding_leaves_what_it_cannot_read_to_the_loader(document: bytes) -> None:
    assert embed(document, IMAGE) == document


def test_embedding_no_image_changes_nothing() -> None:
    document = as_bytes(doc(osImageURL=BASE))
    assert embed(document, "") is document


@settings(max_examples=40)
@given(
    st.dictionaries(st.text(min_size=1, max_size=8), st.text(max_size=8), max_size=3),
    st.one_of(st.none(), st.text(min_size=1, max_size=20)),
    st.text(min_size=1, max_size=30),
)
def test_extract_undoes_embed(annotations: dict[str, str], base: str | None, image: str) -> None:
    annotations = {k: v for k, v in annotations.items() if not k.startswith("machineconfig")}
    spec = {} if base is None else {"osImageURL": base}
    metadata: dict[str, Any] = {"name": "n"}
    if annotations:
        metadata["annotations"] = annotations
    original = {"metadata": metadata, "spec": spec}
    back, found = extract(embed(as_bytes(original), image))
    assert found == image
    assert json.loads(back) == original
