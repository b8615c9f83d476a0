"""What a MachineConfigNode's image-mode status may carry (model/node/mcn): a digested pull
spec within the CRD's 447 characters, else nothing (the API server would refuse the whole
status write)."""

from __future__ import annotations

import pytest

from mcd.model.node.mcn import config_image, image_reference_ok, pool_of

DIGEST = "@sha256:" + "a" * 64


def ref(length: int) -> str:
    """A digested pull spec of exactly ``length`` characters."""
    head = "quay.io/"
    return head + "r" * (length - len(head) - len(DIGEST)) + DIGEST


@pytest.mark.parametrize(("length", "ok"), [(100, True), (447, True), (448, False)])
def test_a_digested_reference_up_to_447_characters(length: int, ok: bool) -> None:
    image = ref(length)
    assert len(image) == length
    assert image_reference_ok(image) is ok


def test_only_references_the_crd_takes_are_reported() -> None:
    good = ref(100)
    assert config_image(good, "") == {"currentImage": good}
    assert config_image("quay.io/x:latest", good) == {"desiredImage": good}
    assert config_image(ref(448), "") is None
    assert config_image("", "") is None


@pytest.mark.parametrize(
    ("roles", "pool"),
    [(["worker"], "worker"), (["worker", "infra"], "infra"), (["control-plane"], "master"),
     (["master", "infra"], "master"), (["worker", "b", "a"], "a"), ([], "worker")],
)  # fmt: skip
def test_the_pool_a_node_reports_under(roles: list[str], pool: str) -> None:
    labels = {f"node-role.kubernetes.io/{r}": "" for r in roles} | {"other/x": "y"}
    assert pool_of(labels) == pool
