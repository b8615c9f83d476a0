"""The stored Ignition shape follows Go's encoding/json into Ignition's v3_5 structs.

Each case is one rule of Go's decoder or encoder that upstream's stored config (and so the
rendered name, which hashes it) depends on: keys matched case-insensitively, a repeated
object merged into the field it already filled, ``null`` clearing a list but not a struct,
``omitempty`` on scalars, Go's int range, and where a refusal points.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcd.model.ignition import goshape
from mcd.model.ignition.goshape import go_shape

EMPTY_IGNITION = {
    "config": {"replace": {"verification": {}}},
    "proxy": {},
    "security": {"tls": {}},
    "timeouts": {},
    "version": "",
}
FILE_STRUCTS: dict[str, Any] = {"contents": {"verification": {}}, "group": {}, "user": {}}
"""What every file gets whatever it sets: Go marshals a struct field even when empty."""


@pytest.fixture(autouse=True)
def _fresh_field_tables() -> None:
    """The per-struct field lists are built on first use: build them under each test."""
    goshape._FIELDS.clear()


def storage(config: dict[str, Any]) -> Any:
    return go_shape({"storage": config})["storage"]


def test_an_empty_config_has_every_struct_and_no_pointer_or_list() -> None:
    shaped = go_shape({})
    assert shaped == {
        "ignition": EMPTY_IGNITION,
        "kernelArguments": {},
        "passwd": {},
        "storage": {},
        "systemd": {},
    }
    # Go marshals fields in struct order, which the generated tables keep
    assert list(shaped) == ["ignition", "kernelArguments", "passwd", "storage", "systemd"]
    assert list(shaped["ignition"]) == ["config", "proxy", "security", "timeouts", "version"]


def test_keys_match_case_insensitively_as_gos_decoder_does() -> None:
    shaped = go_shape({"Storage": {"FILES": [{"Path": "/etc/a", "MODE": 420}]}})
    assert shaped["storage"] == {"files": [{**FILE_STRUCTS, "mode": 420, "path": "/etc/a"}]}


def test_a_key_naming_a_go_type_is_an_unknown_key() -> None:
    files = storage({"files": [{"path": "/etc/a", "string": "/etc/b", "String": "/etc/c"}]})
    assert files == {"files": [{**FILE_STRUCTS, "path": "/etc/a"}]}


def test_a_repeated_object_merges_into_the_struct_it_filled() -> None:
    shaped = go_shape(
        {"ignition": {"version": "3.5.0"}, "Ignition": {"timeouts": {"httpTotal": 5}}}
    )
    assert shaped["ignition"]["version"] == "3.5.0"
    assert shaped["ignition"]["timeouts"] == {"httpTotal": 5}


def test_null_leaves_a_struct_as_it_was() -> None:
    shaped = go_shape({"ignition": {"version": "3.5.0"}, "Ignition": None})
    assert shaped["ignition"]["version"] == "3.5.0"


def test_null_clears_a_list_filled_before() -> None:
    assert storage({"files": [{"path": "/etc/a"}], "Files": None}) == {}
    assert storage({"files": None}) == {}


def test_null_drops_a_pointer() -> None:
    files = storage({"files": [{"path": "/etc/a", "mode": None, "overwrite": None}]})
    assert files == {"files": [{**FILE_STRUCTS, "path": "/etc/a"}]}


def test_omitempty_drops_a_zero_scalar_and_keeps_any_other() -> None:
    disks = storage(
        {
            "disks": [
                {
                    "device": "/dev/sda",
                    "partitions": [{"label": "a"}, {"number": 0}, {"number": 1}, {"number": 7}],
                }
            ]
        }
    )
    assert disks["disks"] == [
        {
            "device": "/dev/sda",
            "partitions": [{"label": "a"}, {}, {"number": 1}, {"number": 7}],
        }
    ]
    tangs = storage(
        {"luks": [{"name": "l", "clevis": {"tang": [{"url": ""}, {"url": "http://t"}]}}]}
    )
    assert tangs["luks"][0]["clevis"]["tang"] == [{}, {"url": "http://t"}]


def test_a_scalar_without_omitempty_is_kept_even_when_empty() -> None:
    assert storage({"disks": [{}]}) == {"disks": [{"device": ""}]}
    assert go_shape({"ignition": {}})["ignition"]["version"] == ""


@pytest.mark.parametrize("mode", [-(2**63), -127, 0, 2**63 - 1])
def test_an_int_in_gos_int64_range_is_kept(mode: int) -> None:
    assert storage({"files": [{"path": "/a", "mode": mode}]})["files"][0]["mode"] == mode


@pytest.mark.parametrize("mode", [2**63, -(2**63) - 1, 2**64, 1.5, True, "420"])
def test_an_int_field_refuses_what_go_cannot_decode_into_int(mode: object) -> None:
    with pytest.raises(ValueError) as refused:
        go_shape({"storage": {"files": [{"path": "/a", "mode": mode}]}})
    assert str(refused.value) == "config.storage.files.mode: cannot unmarshal into int"


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"storage": {"files": "x"}}, "config.storage.files: cannot unmarshal into []File"),
        ({"passwd": []}, "config.passwd: cannot unmarshal into Passwd"),
        ({"ignition": {"version": 3}}, "config.ignition.version: cannot unmarshal into string"),
        (
            {"systemd": {"units": [{"name": "a.service", "enabled": "yes"}]}},
            "config.systemd.units.enabled: cannot unmarshal into bool",
        ),
        (
            {"storage": {"files": [{"path": "/a", "contents": {"source": 5}}]}},
            "config.storage.files.contents.source: cannot unmarshal into string",
        ),
        (
            {"passwd": {"users": [{"name": "core", "sshAuthorizedKeys": "ssh-ed25519 A"}]}},
            "config.passwd.users.sshAuthorizedKeys: cannot unmarshal into []SSHAuthorizedKey",
        ),
    ],
)
def test_a_refusal_names_the_field_and_the_go_type(config: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError) as refused:
        go_shape(config)
    assert str(refused.value) == message


def test_the_shape_is_stable_text_for_the_hash() -> None:
    config = {"storage": {"files": [{"path": "/etc/a", "contents": {"source": "data:,x"}}]}}
    first = json.dumps(go_shape(config), separators=(",", ":"))
    goshape._FIELDS.clear()
    assert json.dumps(go_shape(json.loads(json.dumps(config))), separators=(",", ":")) == first
    assert first.startswith('{"ignition":{"config":{"replace":{"verification":{}}}')
