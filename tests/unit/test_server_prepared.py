"""The served bytes prepared once (:mod:`mcd.server.prepared`): reused while the inputs are
the same, built again when any changes, and a join token's use spliced in giving the very
bytes a whole build gives."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from mcd.model.ignition.served import Extras, served_config, with_annotations
from mcd.server.prepared import Prepared
from mcd.server.tokens import JOINED_WITH
from tests.unit.test_server_served import VERSIONS, mc, v3


def stamped(version: str) -> dict[str, Any]:
    out = mc(v3())
    out.setdefault("metadata", {})["resourceVersion"] = version
    return out


@pytest.mark.parametrize("version", VERSIONS)
def test_a_token_use_spliced_in_is_the_document_built_whole(version: str) -> None:
    extras = Extras(kubelet_ca=b"CA\n", kubeconfig=b"kc")
    plain = served_config(mc(v3()), "rendered-worker-1", version, extras)
    more = {JOINED_WITH: "0123456789abcdef.01234567"}
    whole = served_config(mc(v3()), "rendered-worker-1", version, Extras(b"CA\n", b"kc", more))
    assert with_annotations(plain, "rendered-worker-1", more) == whole
    assert with_annotations(b"{}", "rendered-worker-1", more) is None  # not told apart


def test_built_once_then_again_when_any_input_changes() -> None:
    prepared = Prepared()
    extras = Extras(kubelet_ca=b"CA\n")
    first = prepared.body("worker", stamped("7"), "rendered-worker-1", "3.3.0", extras)
    for _ in range(5):
        assert prepared.body("worker", stamped("7"), "rendered-worker-1", "3.3.0", extras) == first
    assert prepared.builds == 1
    prepared.body("worker", stamped("8"), "rendered-worker-1", "3.3.0", extras)  # rewritten
    prepared.body("worker", stamped("8"), "rendered-worker-1", "3.3.0", Extras(b"CA2\n"))
    prepared.body("worker", stamped("8"), "rendered-worker-1", "3.2.0", Extras(b"CA2\n"))
    prepared.body("infra", stamped("8"), "rendered-worker-1", "3.2.0", Extras(b"CA2\n"))
    assert prepared.builds == 5
    used = prepared.body(
        "worker", stamped("8"), "rendered-worker-1", "3.3.0",
        Extras(b"CA2\n", annotations={JOINED_WITH: "0123456789abcdef.01234567"}),
    )  # fmt: skip
    assert prepared.builds == 5 and b"joined-with" not in used  # base64 in the data URL
    assert used != prepared.body(
        "worker", stamped("8"), "rendered-worker-1", "3.3.0", Extras(b"CA2\n")
    )


def test_a_config_without_a_resource_version_is_never_reused() -> None:
    prepared = Prepared()
    doc = copy.deepcopy(mc(v3()))
    prepared.body("worker", doc, "rendered-worker-1", "3.3.0", Extras())
    prepared.body("worker", doc, "rendered-worker-1", "3.3.0", Extras())
    assert prepared.builds == 0
