"""PinnedImageSets read from the API and the MachineConfigNode's pinned-image conditions
(model/node/pinned; upstream ``pinned_image_set.go``): what the node pulls and reports."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcd.model.node import pinned as p
from mcd.model.node.mcn import PINNED_DEGRADED, PINNED_PROGRESSING


def test_a_set_reads_name_uid_generation_and_its_images_trimmed_in_order() -> None:
    obj = {
        "metadata": {"name": "worker-pinned", "uid": "u-1", "generation": 3},
        "spec": {
            "pinnedImages": [
                {"name": " quay.io/a@sha256:1 "},
                {"name": "quay.io/b@sha256:2"},
                {"name": "   "},
                {},
                "not-a-map",
                {"name": "quay.io/a@sha256:1"},
            ]
        },
    }
    assert p.image_set(obj) == p.ImageSet(
        name="worker-pinned",
        uid="u-1",
        generation=3,
        images=("quay.io/a@sha256:1", "quay.io/b@sha256:2", "quay.io/a@sha256:1"),
    )


def test_a_set_without_generation_spec_or_metadata_is_generation_one_and_empty() -> None:
    assert p.image_set({}) == p.ImageSet(name="", uid="", generation=1, images=())
    assert p.image_set({"metadata": None, "spec": None}) == p.ImageSet("", "", 1, ())
    assert p.image_set({"metadata": {"name": "s", "generation": 0}}).generation == 1
    assert p.image_set({"spec": {"pinnedImages": None}}).images == ()


@given(st.lists(st.text(max_size=20), max_size=6), st.integers(min_value=1, max_value=10**6))
def test_a_sets_images_are_its_non_blank_names_stripped(names: list[str], gen: int) -> None:
    obj = {
        "metadata": {"name": "s", "uid": "u", "generation": gen},
        "spec": {"pinnedImages": [{"name": n} for n in names]},
    }
    got = p.image_set(obj)
    assert got.generation == gen
    assert got.images == tuple(n.strip() for n in names if n.strip())


def test_a_pool_names_its_sets_and_skips_unnamed_references() -> None:
    pool = {
        "spec": {
            "pinnedImageSets": [{"name": "a"}, {"name": ""}, {}, "junk", {"name": "b"}],
        }
    }
    assert p.pool_set_names(pool) == ["a", "b"]
    assert p.pool_set_names({}) == []
    assert p.pool_set_names({"spec": None}) == []
    assert p.pool_set_names({"spec": {"pinnedImageSets": None}}) == []


def test_prefetching_names_the_node() -> None:
    cond = p.progressing("worker-0")
    assert cond.at("T") == {
        "type": PINNED_PROGRESSING,
        "status": "True",
        "reason": "ImagePrefetch",
        "message": "node is prefetching images: worker-0",
        "lastTransitionTime": "T",
    }


def test_completion_clears_both_conditions_in_upstreams_words() -> None:
    progressing, degraded = p.completed()
    assert progressing.at("T") == {
        "type": "PinnedImageSetsProgressing",
        "status": "False",
        "reason": "AsExpected",
        "message": "All pinned image sets complete",
        "lastTransitionTime": "T",
    }
    assert degraded.at("T") == {
        "type": "PinnedImageSetsDegraded",
        "status": "False",
        "reason": "AsExpected",
        "message": "All is good",
        "lastTransitionTime": "T",
    }


def test_a_failed_prefetch_degrades_with_upstreams_message() -> None:
    assert p.degraded().at("T") == {
        "type": PINNED_DEGRADED,
        "status": "True",
        "reason": "PrefetchFailed",
        "message": "One or more PinnedImageSet is experiencing an error. See PinnedImageSet "
        "list for more details.",
        "lastTransitionTime": "T",
    }


@pytest.mark.parametrize("text", ["", "Gi", "10Xi", "ten", "1.5.5Gi", "10 Gi"])
def test_a_malformed_quantity_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        p.parse_quantity(text)


def test_a_node_without_a_name_or_a_usable_quantity_is_refused_by_name() -> None:
    unnamed = {"status": {"allocatable": {"ephemeral-storage": "1Gi"}}}
    assert p.node_problem(unnamed, minimum=2**31) == (
        "storage available is less than minimum required capacity: 1073741824, required: 2147483648"
    )
    assert p.node_problem({"status": {}}) == 'node "" has no ephemeral storage capacity'
    garbled = {"metadata": {"name": "n1"}, "status": {"allocatable": {"ephemeral-storage": "x"}}}
    assert p.node_problem(garbled) == 'node "n1" has no ephemeral storage capacity'
    assert p.node_problem({"metadata": {}, "status": {}}) == (
        'node "" has no ephemeral storage capacity'
    )


def test_a_failed_generations_error_is_capped_at_32_kib() -> None:
    s = p.ImageSet("a", "u1", 1, ("x",))
    [entry] = p.set_entries([s], {}, "e" * 40000)
    assert len(entry["lastFailedGenerationError"]) == 32768


def test_control_characters_in_a_pinned_name_are_toml_escaped() -> None:
    assert p.crio_dropin(["a\x7fb\x01"]) == (
        b'[crio]\n  [crio.image]\n    pinned_images = ["a\\u007Fb\\u0001"]\n'
    )
