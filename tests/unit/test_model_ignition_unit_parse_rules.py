"""Units, dropins and spec 2.2's networkd as the parser reads them (model/ignition/parse):
each malformed field refused naming its full path, 2.2's deprecated ``enable``."""

from __future__ import annotations

from typing import Any

import pytest

from mcd.model.errors import ConfigParseError
from mcd.model.ignition.parse import parse_ignition

V3 = {"version": "3.4.0"}
V2 = {"version": "2.2.0"}
UNIT = "spec.config.systemd.units[0]"


def units(*items: Any, ignition: dict[str, str] = V3) -> dict[str, Any]:
    return {"ignition": ignition, "systemd": {"units": list(items)}}


def unit(**kw: Any) -> dict[str, Any]:
    return {"name": "a.service", **kw}


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (units("x"), f"{UNIT}: expected an object, got a string"),
        (units({}), f"{UNIT}: missing name"),
        (units({"name": 5}), f"{UNIT}.name: expected a string, got an integer"),
        (units(unit(contents=5)), f"{UNIT}.contents: expected a string, got an integer"),
        (units(unit(mask="yes")), f"{UNIT}.mask: expected a boolean, got a string"),
        (units(unit(enabled="yes")), f"{UNIT}.enabled: expected a boolean, got a string"),
        (units(unit(enable="yes"), ignition=V2), f"{UNIT}.enable: expected a boolean, got a string"),
        (units(unit(dropins="x")), f"{UNIT}.dropins: expected a list, got a string"),
        (units(unit(dropins=[{"name": "a.conf"}, "x"])),
         f"{UNIT}.dropins[1]: expected an object, got a string"),
        (units(unit(dropins=[{"name": "a.conf"}, {}])), f"{UNIT}.dropins[1]: missing name"),
        (units(unit(dropins=[{"name": "a.conf", "contents": 5}])),
         f"{UNIT}.dropins[0].contents: expected a string, got an integer"),
        (units(unit(dropins=[{"name": 7}])),
         f"{UNIT}.dropins[0].name: expected a string, got an integer"),
        ({"ignition": V2, "networkd": {"units": [{"name": "a.network"}]}},
         "spec.config.networkd.units: the networkd section is not supported; use systemd units "
         "or files"),
        ({"ignition": V2, "networkd": "x"}, "spec.config.networkd: expected an object, got a string"),
        ({"ignition": V2, "networkd": {"units": "x"}},
         "spec.config.networkd.units: expected a list, got a string"),
    ],
)  # fmt: skip
def test_a_malformed_unit_is_refused_naming_its_path(doc: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigParseError) as e:
        parse_ignition(doc, "spec.config")
    assert str(e.value) == message


def test_a_unit_reads_back_whole() -> None:
    doc = units(unit(contents="[Unit]\n", mask=False, enabled=True,
                     dropins=[{"name": "10-a.conf", "contents": "[Service]\n"}, {"name": "20-b.conf"}]))  # fmt: skip
    [got] = parse_ignition(doc, "spec.config").units
    assert (got.name, got.contents, got.enabled, got.mask) == ("a.service", "[Unit]\n", True, False)
    assert [(d.name, d.contents) for d in got.dropins] == [
        ("10-a.conf", "[Service]\n"), ("20-b.conf", None)
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("fields", "enabled"),
    [({"enable": True}, True), ({"enable": True, "enabled": False}, False), ({"enable": False}, None),
     ({}, None)],
)  # fmt: skip
def test_spec_2_2s_deprecated_enable_turns_a_unit_on(
    fields: dict[str, Any], enabled: bool | None
) -> None:
    [got] = parse_ignition(units(unit(**fields), ignition=V2), "spec.config").units
    assert got.enabled is enabled


def test_an_empty_networkd_section_is_no_problem() -> None:
    assert parse_ignition({"ignition": V2, "networkd": {"units": []}}, "spec.config").units == ()
