"""From untrusted text to the model (model/machineconfig): every refusal says what is wrong
and where (line, column, byte), never the document's text; nesting and alias bombs are
refused at their bounds; JSON, flow YAML and a byte-order mark all read."""

from __future__ import annotations

from typing import Any

import pytest

from mcd.model.errors import ConfigParseError
from mcd.model.machineconfig import decode_document, load_machine_config

YAML = "not valid YAML or JSON: "


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (b"a: 1\n  b: 2\n", YAML + "mapping values are not allowed here at line 2, column 4"),
        (b"key: [1, 2\n", YAML + "while parsing a flow sequence: expected ',' or ']', but got "
         "'<stream end>' at line 2, column 1"),
        ('{"a": 1, "b": [1, 2}', YAML + "while parsing a flow sequence: expected ',' or ']', "
         "but got '}' at line 1, column 20"),
        ("[1, 2", YAML + "while parsing a flow sequence: expected ',' or ']', but got "
         "'<stream end>' at line 1, column 6"),
        ("a: \x01\n", YAML + "special characters are not allowed (U+0001) at line 1, column 4"),
        ("ok: 1\nb: c\x07d\n",
         YAML + "special characters are not allowed (U+0007) at line 2, column 5"),
        (b"\xff\xfe", "document is not valid UTF-8: invalid start byte at byte 0"),
        (b"a: \xc3(", "document is not valid UTF-8: invalid continuation byte at byte 3"),
        ("a: *x\n", YAML + "found undefined alias 'x' at line 1, column 4"),
        ("\t- a\n", YAML + "while scanning for the next token: found character '\\t' that "
         "cannot start any token at line 1, column 1"),
    ],
)  # fmt: skip
def test_a_document_that_does_not_parse_says_what_and_where(
    text: bytes | str, message: str
) -> None:
    with pytest.raises(ConfigParseError) as e:
        decode_document(text)
    assert str(e.value) == message


def test_a_huge_number_is_refused_on_one_line() -> None:
    with pytest.raises(ConfigParseError) as e:
        decode_document('{"a": ' + "1" * 5000 + "}")
    message = str(e.value)
    assert message.startswith(YAML + "Exceeds the limit (4300 digits) for integer string")
    assert "\n" not in message and "1111" not in message


@pytest.mark.parametrize(
    ("text", "doc"),
    [
        ("{a: 1}", {"a": 1}),
        ('\ufeff{"a": 1}', {"a": 1}),
        ('  {"a": [1]}', {"a": [1]}),
        ("\ufeffa: 1\n", {"a": 1}),
        ("a: &x [1, 2]\nb: [*x, *x]\n", {"a": [1, 2], "b": [[1, 2], [1, 2]]}),
        (b'{"a": "\xc3\xa9"}', {"a": "\u00e9"}),
    ],
)
def test_json_flow_yaml_and_a_byte_order_mark_all_read(text: str | bytes, doc: Any) -> None:
    assert decode_document(text) == doc


@pytest.mark.parametrize(("depth", "refused"), [(200, False), (201, False), (202, True)])
def test_nesting_is_refused_past_two_hundred_levels(depth: int, refused: bool) -> None:
    text = "[" * depth + "]" * depth
    if refused:
        with pytest.raises(ConfigParseError, match=r"^document is nested too deeply$"):
            decode_document(text)
    else:
        assert decode_document(text) is not None


def test_an_alias_bomb_is_refused_before_it_expands() -> None:
    lines = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for prev, name in zip("abcdef", "bcdefg", strict=True):
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 10) + "]")
    with pytest.raises(ConfigParseError) as e:
        decode_document("\n".join(lines) + "\n")
    assert str(e.value) == "document expands to more than 5000000 values (YAML alias bomb?)"


def test_an_alias_shared_many_times_within_the_bound_reads() -> None:
    lines = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for prev, name in zip("abcd", "bcde", strict=True):
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 10) + "]")
    doc = decode_document("\n".join(lines) + "\n")
    assert len(doc["e"]) == 10 and doc["e"][0][0][0][0] == doc["a"]


def test_a_bare_ignition_config_takes_the_name_given_or_the_empty_configs() -> None:
    bare = '{"ignition": {"version": "3.2.0"}}'
    assert load_machine_config(bare).name == "mco-empty-mc"
    assert load_machine_config(bare, "rendered-worker-1").name == "rendered-worker-1"
