"""MachineConfigNode status of an image-mode node (issue 32; pure): upstream's
ImageModeStatusReporting condition set and ``configImage``, within the CRD's rules."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mcd.model.node import mcn as m

IMAGE = "quay.io/openshift/os@sha256:" + "a" * 64


def first(image_mode: bool, images: tuple[str, str] = ("", "")) -> m.Obj:
    status = m.next_status(
        None, m.phase(m.UPDATED, "Node n Updated"), None, desired_spec="r-1",
        desired_annotation="r-1", current_annotation="r-1", now="T",
        image_mode=image_mode, images=images,
    )  # fmt: skip
    assert status is not None
    return status


def test_image_mode_defaults_are_upstreams_image_mode_conditions() -> None:
    types = [c["type"] for c in first(True, (IMAGE, IMAGE))["conditions"]]
    assert "AppliedFiles" in types and "AppliedOSImage" in types
    assert "ImagePulledFromRegistry" in types and "AppliedFilesAndOS" not in types
    assert sorted(types) == sorted(m.IMAGE_MODE_CONDITIONS)
    plain = [c["type"] for c in first(False)["conditions"]]
    assert "AppliedFilesAndOS" in plain and "ImagePulledFromRegistry" not in plain


def test_config_image_from_the_annotations_each_when_set() -> None:
    assert first(True, (IMAGE, IMAGE))["configImage"] == {
        "currentImage": IMAGE, "desiredImage": IMAGE}  # fmt: skip
    assert first(True, ("", IMAGE))["configImage"] == {"desiredImage": IMAGE}
    assert "configImage" not in first(False)


@given(st.text(max_size=80))
def test_only_an_image_the_crd_takes_is_reported(junk: str) -> None:
    got = m.config_image(junk, "")
    assert got is None or m.image_reference_ok(junk)
    assert not m.image_reference_ok("quay.io/os@sha256:aaaa")  # short digest
    assert not m.image_reference_ok("quay.io/os:latest")
