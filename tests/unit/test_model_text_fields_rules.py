"""Go's zero values and escapes as the model uses them (model/fields, model/text): a user
field set to Go's zero value is no change, any other value is one; non-printable characters
are escaped as Go's ``strconv.Quote`` writes them, at each boundary."""

from __future__ import annotations

from typing import Any

import pytest

from mcd.model.errors import ConfigParseError
from mcd.model.fields import is_empty, type_name
from mcd.model.ignition.parse import parse_ignition
from mcd.model.text import escape, printable


@pytest.mark.parametrize(
    ("value", "empty"),
    [(None, True), (False, True), (0, True), ("", True), ([], True), ({}, True), (0.0, True),
     (True, False), (1, False), ("x", False), ([0], False), ({"a": None}, False)],
)  # fmt: skip
def test_gos_zero_values_are_empty(value: Any, empty: bool) -> None:
    assert is_empty(value) is empty


def user_other(value: Any) -> tuple[tuple[str, Any], ...]:
    doc = {"ignition": {"version": "3.4.0"},
           "passwd": {"users": [{"name": "core", "homeDir": value}]}}  # fmt: skip
    return parse_ignition(doc).passwd.users[0].other


def test_a_user_field_at_its_zero_value_is_no_field_at_all() -> None:
    assert user_other("") == user_other(None) == ()
    assert user_other("/home/core") != ()


def test_a_float_is_named_a_number() -> None:
    with pytest.raises(ConfigParseError) as e:
        parse_ignition({"ignition": {"version": "3.4.0"}, "storage": {"files": [{"path": 1.5}]}})
    assert str(e.value).endswith("expected a string, got a number")
    assert type_name(1.5) == "a number"
    assert type_name(object()) == "object"


@pytest.mark.parametrize(
    ("char", "escaped"),
    [("\x1b", "\\x1b"), ("\x7f", "\\x7f"), ("\x80", "\\u0080"), ("\x85", "\\u0085"),
     ("\ufeff", "\\ufeff"), ("\uffff", "\\uffff"), ("\U00010000", "\\U00010000"),
     ("\U000e0001", "\\U000e0001"), ("\n", "\\n"), ("\t", "\\t")],
)  # fmt: skip
def test_each_escape_as_go_writes_it(char: str, escaped: str) -> None:
    assert escape(char) == escaped


def test_printable_keeps_only_what_it_is_told_to() -> None:
    assert printable("a\tb\x80") == "a\\tb\\u0080"
    assert printable("a\tb", "\t") == "a\tb"
    assert printable("plain") == "plain"
