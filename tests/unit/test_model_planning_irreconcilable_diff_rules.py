"""The MachineConfigNode's ``irreconcilableChanges`` entries in jd's rendering
(model/planning/overrides): an array element added or removed with its context, a list
emptied, a key removed, a changed type, non-ASCII kept, and the CRD's length limits."""

from __future__ import annotations

from typing import Any

import pytest

from mcd.model.planning.overrides import irreconcilable_changes, overrides_from
from mcd.model.planning.reconcile import Overrides
from tests.builders import mc

D = "/dev/sda"


def changes(old: dict[str, Any], new: dict[str, Any]) -> list[dict[str, str]]:
    return irreconcilable_changes(mc("a", storage=old), mc("b", storage=new))


def test_an_element_added_or_removed_shows_the_last_common_one_as_context() -> None:
    one = {"disks": [{"device": D, "partitions": [{"label": "x"}]}]}
    two = {"disks": [{"device": D, "partitions": [{"label": "x"}, {"label": "y", "number": 2}]}]}
    path = "spec.config.storage.disks[0].partitions[1]"
    assert changes(one, two) == [
        {"fieldPath": path, "diff": '  {"label":"x"}\n+ {"label":"y","number":2}\n]\n'}
    ]
    assert changes(two, one) == [
        {"fieldPath": path, "diff": '  {"label":"x"}\n- {"label":"y","number":2}\n]\n'}
    ]


def test_a_list_emptied_opens_with_its_bracket() -> None:
    old = {"raid": [{"name": "md0", "level": "raid1", "devices": ["/dev/a", "/dev/b"]}]}
    new = {"raid": [{"name": "md0", "level": "raid1", "devices": []}]}
    assert changes(old, new) == [
        {"fieldPath": "spec.config.storage.raid[0].devices[0]",
         "diff": '[\n- "/dev/a"\n- "/dev/b"\n]\n'}
    ]  # fmt: skip


def test_a_key_removed_a_type_changed_and_non_ascii_kept() -> None:
    old = {"disks": [{"device": D, "wipeTable": True}]}
    new = {"disks": [{"device": "/dev/sdé", "wipeTable": 1}]}
    assert changes(old, new) == [
        {
            "fieldPath": "spec.config.storage.disks[0].device",
            "diff": '- "/dev/sda"\n+ "/dev/sdé"\n',
        },
        {"fieldPath": "spec.config.storage.disks[0].wipeTable", "diff": "- true\n+ 1\n"},
    ]
    assert changes({"disks": [{"device": D, "wipeTable": True}]}, {"disks": [{"device": D}]}) == [
        {"fieldPath": "spec.config.storage.disks[0].wipeTable", "diff": "- true\n"}
    ]


def test_a_path_past_70_characters_names_its_nearest_parent_that_fits() -> None:
    key = "k" * 40
    old = {"filesystems": [{"device": D, "format": "xfs", "options": [{key: 1}]}]}
    new = {"filesystems": [{"device": D, "format": "xfs", "options": [{key: 2}]}]}
    [entry] = changes(old, new)
    assert entry["fieldPath"] == "spec.config.storage.filesystems[0].options[0]"
    assert entry["diff"] == "- 1\n+ 2\n"


@pytest.mark.parametrize(("length", "cut"), [(4096, False), (4097, True)])
def test_a_diff_past_4096_characters_is_cut_with_an_ellipsis(length: int, cut: bool) -> None:
    device = "/" + "d" * (length - 19)
    [entry] = changes({"disks": [{"device": D}]}, {"disks": [{"device": device}]})
    full = f'- "{D}"\n+ "{device}"\n'
    assert len(full) == length
    assert entry["diff"] == (full[:4092] + "...\n" if cut else full)


@pytest.mark.parametrize(
    "obj",
    [{"spec": {"irreconcilableValidationOverrides": {"storage": "Disks"}}},
     {"spec": {"irreconcilableValidationOverrides": ["Disks"]}},
     {"spec": ["x"]}, {"spec": None}, "cluster"],
)  # fmt: skip
def test_an_override_not_in_the_crds_shape_allows_nothing(obj: Any) -> None:
    assert overrides_from(obj) == Overrides()
