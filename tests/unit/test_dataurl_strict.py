"""``data:`` URLs read as strictly as Ignition reads them (issue 32; pure, hypothesis).

Ignition's ``validateURL`` and upstream's ``DecodeIgnitionFileContents`` decode with
``vincent-petithory/dataurl``. The table holds Ignition 2.14's own verdict on each URL
(``ignition-validate``, recorded; re-checked live below where it is installed).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcd.model.errors import DecodeError
from mcd.model.ignition.dataurl import decode_data_url, encode_data_url

# (url, bytes Ignition decodes, or the refusal in the library's words)
CASES: list[tuple[str, bytes | str]] = [
    ("data:,a%20b", b"a b"),
    ("data:,", b""),
    ("data:;base64,YWI=", b"ab"),
    ("data:text/plain;charset=utf-8;base64,YWI=", b"ab"),
    ("data:x-foo/bar,x", b"x"),
    ('data:text/plain;a="b c",x', b"x"),
    ("data:,a'b()*!~", b"a'b()*!~"),
    ("data:,a b", "invalid data character"),
    ("data:,a\u00e9", "invalid data character"),
    ("data:,[Unit]", "invalid data character"),
    ("data:,a{b", "invalid data character"),
    ("data:;base64,YW%3D%3D", "invalid data character"),
    ("data:;base64,YW\nI=", "unable to parse url"),
    ("data:;base64,YW\rI=", "unable to parse url"),
    ("data:,a#b", "invalid data character"),
    ("data:,a\tb", "unable to parse url"),
    ("DATA:,x", "missing data prefix"),
    ("data:foo/bar,x", "invalid media type"),
    ("data:text,x", "invalid character for media type"),
    ("data:x/b,c", "invalid character for media type"),
    ("data:text/plain", "incomplete media type"),
    ("data:;foo,x", "expected base64, got foo"),
    ("data:text/plain;base64", "unterminated parameter sequence"),
    ("data:;=,x", "unterminated parameter sequence"),
    ('data:text/plain;a="x"y,z', "expected semicolon or comma"),
    ('data:text/plain;a="\\q",x', "invalid syntax"),
    ("data:,%zz", "rfc2396: invalid char 0x25 in unescape sequence"),
    ("data:,%2", "rfc2396: unexpected end of unescape sequence"),
    ("data:text/plain;a=%zz,x", "rfc2396: invalid char 0x25 in unescape sequence"),
]


@pytest.mark.parametrize(("url", "expected"), CASES)
def test_ignitions_verdict_on_each_url(url: str, expected: bytes | str) -> None:
    if isinstance(expected, bytes):
        assert decode_data_url(url) == expected
    else:
        with pytest.raises(DecodeError) as e:
            decode_data_url(url)
        assert str(e.value.detail) == expected


@pytest.mark.skipif(shutil.which("ignition-validate") is None, reason="needs ignition-validate")
def test_the_table_is_ignitions_own_verdict(tmp_path: Path) -> None:
    for i, (url, expected) in enumerate(CASES):
        path = tmp_path / f"{i}.ign"
        files = [{"path": "/etc/a", "contents": {"source": url}}]
        path.write_text(json.dumps({"ignition": {"version": "3.3.0"}, "storage": {"files": files}}))
        done = subprocess.run(
            ["ignition-validate", str(path)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if isinstance(expected, bytes):
            assert done.returncode == 0, (url, done.stdout)
        else:
            assert done.returncode == 1 and expected in done.stdout + done.stderr, (url, done)


URL_BYTES = "".join(chr(c) for c in range(33, 127))


def _escape(data: bytes) -> str:
    keep = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.!~*'()"
    return "".join(chr(b) if b in keep else f"%{b:02X}" for b in data)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_escaped_and_base64_urls_round_trip(data: bytes) -> None:
    assert decode_data_url("data:," + _escape(data)) == data
    assert decode_data_url(encode_data_url(data)) == data


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=URL_BYTES + " \n\t\u00e9", max_size=40))
def test_any_text_decodes_or_is_refused_cleanly(rest: str) -> None:
    try:
        decode_data_url("data:" + rest)
    except DecodeError as e:
        assert e.detail and "\n" not in e.detail
