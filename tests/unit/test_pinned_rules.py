"""PinnedImageSets on a node, the pure rules (issue 32; upstream ``pinned_image_set.go``)."""

from __future__ import annotations

import tomllib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcd.model.node import pinned as p

images = st.lists(st.text(min_size=1, max_size=40), max_size=8)


@given(images)
def test_the_crio_dropin_is_toml_crio_reads_back(names: list[str]) -> None:
    wanted = p.unique_sorted(names)
    parsed = tomllib.loads(p.crio_dropin(wanted).decode())
    assert parsed == {"crio": {"image": {"pinned_images": wanted}}}


def test_the_dropin_is_burntsushi_tomls_encoding() -> None:
    assert p.crio_dropin(["a", "b"]) == (
        b'[crio]\n  [crio.image]\n    pinned_images = ["a", "b"]\n'
    )


def test_unique_sorted_drops_blanks_and_duplicates() -> None:
    assert p.unique_sorted(["b", " a ", "", "b", "  "]) == ["a", "b"]


@pytest.mark.parametrize(
    ("text", "value"),
    [("100Gi", 100 * 2**30), ("16Gi", 2**34), ("5e9", 5 * 10**9), ("500M", 5 * 10**8),
     ("1073741824", 2**30), ("1.5Ki", 1536)],
)  # fmt: skip
def test_quantities(text: str, value: int) -> None:
    assert p.parse_quantity(text) == value


def node(storage: str | None, ready: str = "True", pressure: str = "False") -> p.Obj:
    status: p.Obj = {"conditions": [{"type": "Ready", "status": ready},
                                    {"type": "DiskPressure", "status": pressure}]}  # fmt: skip
    if storage is not None:
        status["allocatable"] = {"ephemeral-storage": storage}
    return {"metadata": {"name": "n1"}, "status": status}


def test_the_space_check_in_upstreams_words() -> None:
    assert p.node_problem(node("100Gi")) is None
    assert p.node_problem(node("16Gi")) is None
    assert p.node_problem(node("10Gi")) == (
        "storage available is less than minimum required capacity: 10737418240, "
        "required: 17179869184"
    )
    assert p.node_problem(node(None)) == 'node "n1" has no ephemeral storage capacity'
    assert p.node_problem(node("100Gi", ready="False")) == "node n1 is reporting NotReady=False"
    assert p.node_problem(node("100Gi", pressure="True")) == "node n1 is reporting OutOfDisk=True"


def test_status_entries_follow_upstreams_apply_config() -> None:
    a = p.ImageSet("a", "u1", 2, ("x",))
    b = p.ImageSet("b", "u2", 1, ("y",))
    assert p.set_entries([a, b], {"u1": 2}, None) == [
        {"name": "a", "desiredGeneration": 2, "currentGeneration": 2},
        {"name": "b", "desiredGeneration": 1},
    ]
    assert p.set_entries([a, b], {"u1": 1}, "boom") == [
        {"name": "a", "desiredGeneration": 2, "lastFailedGeneration": 2,
         "lastFailedGenerationError": "boom"},
        {"name": "b", "desiredGeneration": 1, "lastFailedGeneration": 1,
         "lastFailedGenerationError": "boom"},
    ]  # fmt: skip


def test_pull_failures_in_upstreams_words() -> None:
    assert p.pull_failure("i", 5, "manifest unknown", no_space=False) == (
        'failed to pull image "i" (5 tries): timed out waiting for the condition: manifest unknown'
    )
    disk = "write /x: no space left on device"
    assert p.is_no_space(disk)
    assert p.pull_failure("i", 1, disk, no_space=True) == (
        f'failed to pull image "i" (1 tries): {disk}: {disk}'
    )
