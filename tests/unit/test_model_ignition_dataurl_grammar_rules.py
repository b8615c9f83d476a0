"""The data URL grammar (model/ignition/dataurl_lex) on every branch: media types, x-tokens,
parameters, quoted values with Go's escapes, percent escapes, fragments, base64; and gzip
contents (model/ignition/dataurl). The table holds Ignition 2.14's own verdict on each URL
(``ignition-validate``, recorded; re-checked live below where it is installed)."""

from __future__ import annotations

import base64
import gzip
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from mcd.model.errors import DecodeError
from mcd.model.ignition.dataurl import decode_data_url, decoded_size, decompress, encode_data_url

# (url, the bytes it holds, or the refusal in the library's words)
CASES: list[tuple[str, bytes | str]] = [
    ('data:text/plain;a="a\\nb",x', b'x'),
    ('data:text/plain;a="\\t",x', b'x'),
    ('data:text/plain;a="\\\\",x', b'x'),
    ('data:text/plain;a="\\"",x', b'x'),
    ('data:text/plain;a="\\x41",x', b'x'),
    ('data:text/plain;a="\\xff",x', b'x'),
    ('data:text/plain;a="\\u00e9",x', b'x'),
    ('data:text/plain;a="\\U0001F600",x', b'x'),
    ('data:text/plain;a="\\101",x', b'x'),
    ('data:text/plain;a="\\377",x', b'x'),
    ('data:text/plain;a="\\a\\b\\f\\r\\v",x', b'x'),
    ('data:text/plain;a="\\U0010FFFF",x', b'x'),
    ('data:text/plain;a="\\uD7FF",x', b'x'),
    ('data:text/plain;a="\\uE000",x', b'x'),
    ('data:text/plain;a="\\q",x', 'invalid syntax'),
    ('data:text/plain;a="\\x4",x', 'invalid syntax'),
    ('data:text/plain;a="\\xZZ",x', 'invalid syntax'),
    ('data:text/plain;a="\\x4g",x', 'invalid syntax'),
    ('data:text/plain;a="\\uD800",x', 'invalid syntax'),
    ('data:text/plain;a="\\uDFFF",x', 'invalid syntax'),
    ('data:text/plain;a="\\U00110000",x', 'invalid syntax'),
    ('data:text/plain;a="\\u12",x', 'invalid syntax'),
    ('data:text/plain;a="\\400",x', 'invalid syntax'),
    ('data:text/plain;a="\\18",x', 'invalid syntax'),
    ('data:text/plain;a="\\1",x', 'invalid syntax'),
    ('data:text/plain;a="\\8",x', 'invalid syntax'),
    ('data:text/plain;a="\\\'",x', 'invalid syntax'),
    ('data:text/plain;a="\\x",x', 'invalid syntax'),
    ('data:text/plain;a="\\0",x', 'invalid syntax'),
    ('data:text/plain;a="\\000",x', b'x'),
    ('data:text/plain;a="\\07a",x', 'invalid syntax'),
    ('data:text/plain;a="\\xa",x', 'invalid syntax'),
    ('data:text/plain;a="\\u004G",x', 'invalid syntax'),
    ('data:text/plain;a="\\x41\\q",x', 'invalid syntax'),
    ('data:text/plain;a="ok\\x41",x', b'x'),
    ('data:text/plain;a="\\e",x', 'invalid syntax'),
    ('data:text/plain;a="\\U0000004",x', 'invalid syntax'),
    ('data:text/plain;a="bé",x', 'invalid character for parameter value'),
    ('data:text/plain;a="b\\é",x', 'invalid escaped character'),
    ('data:text/plain;a="",x', b'x'),
    ('data:text/plain;a="a;b",x', b'x'),
    ('data:text/plain;a="a,b",x', b'x'),
    ('data:x,y', 'missing media type slash'),
    ('data:X-a/b,c', b'c'),
    ('data:xa/b,c', 'invalid media type'),
    ('data:x', 'missing media type slash'),
    ('data:x/', 'missing media type slash'),
    ('data:x-/b,c', b'c'),
    ('data:X/b,c', 'invalid character for media type'),
    ('data:xy/z,c', 'invalid media type'),
    ('data:Xy/z,c', 'invalid media type'),
    ('data:text/plain,x', b'x'),
    ('data:text/plain;,x', 'unterminated parameter sequence'),
    ('data:text/plain;a=b,x', b'x'),
    ('data:text/plain;a=b;c=d,x', b'x'),
    ('data:text/plain;a=b', 'missing comma before data'),
    ('data:text/plain;a=', 'missing comma before data'),
    ('data:text/plain;a=b;base64,YWI=', b'ab'),
    ('data:text/plain;a=b"c,x', 'invalid character for parameter value'),
    ('data:text/plain;a="b"c,x', 'expected semicolon or comma'),
    ('data:text/plain;a="b";c=d,x', b'x'),
    ('data:text/plain;a="b"', 'missing comma before data'),
    ('data:text/plain;a="b', 'unclosed quoted string'),
    ('data:text/plain;a=@,x', 'invalid character for parameter value'),
    ('data:text/plain;@=b,x', 'invalid character for parameter attribute'),
    ('data:text/plain;a@,x', 'invalid character for parameter attribute'),
    ('data:text/plain;a,x', 'expected base64, got a'),
    ('data:text/plain;;,x', 'invalid character for parameter attribute'),
    ('data:text/plain;a=b@,x', 'invalid character for parameter value'),
    ('data:text/plain;a="bé",x', 'invalid character for parameter value'),
    ('data:text/plain;a="\\é",x', 'invalid escaped character'),
    ('data:text/plain@,x', 'invalid character for media subtype'),
    ('data:text/@,x', 'invalid character for media subtype'),
    ('data:text/plain@x,y', 'invalid character for media subtype'),
    ('data:text/pl ain,x', 'invalid character for media subtype'),
    ('data:te xt/plain,x', 'invalid character for media type'),
    ('data:@,x', 'invalid character after data prefix'),
    ('data: ,x', 'invalid character after data prefix'),
    ('data:é,x', 'invalid character after data prefix'),
    ('data:text/plain;a=%41,x', b'x'),
    ('data:text/plain;a=%4,x', 'rfc2396: unexpected end of unescape sequence'),
    ('data:image/png,x', b'x'),
    ('data:audio/x,y', b'y'),
    ('data:video/x,y', b'y'),
    ('data:application/json,{}', 'invalid data character'),
    ('data:message/x,y', b'y'),
    ('data:multipart/x,y', b'y'),
    ('data:textual/x,y', b'y'),
    ('data:imagex/y,z', b'z'),
    ('data:,a%41b', b'aAb'),
    ('data:,a%4', 'rfc2396: unexpected end of unescape sequence'),
    ('data:,a%', 'rfc2396: unexpected end of unescape sequence'),
    ('data:,a%%41', 'rfc2396: invalid char 0x25 in unescape sequence'),
    ('data:,a%G1', 'rfc2396: invalid char 0x25 in unescape sequence'),
    ('data:,=41', b'=41'),
    ('data:,a=b', b'a=b'),
    ('data:,%3D41', b'=41'),
    ('data:,a#b%zz', 'unable to parse url'),
    ('data:,a#b%41', 'invalid data character'),
    ('data:/,x', 'invalid character after data prefix'),
    ('data:/a%zz,x', 'unable to parse url'),
    ('data:/a%41,x', 'invalid character after data prefix'),
    ('data:,x#', 'invalid data character'),
    ('data:;base64,YW\tI=', 'unable to parse url'),
    ('data:;base64,YW#I=', 'invalid data character'),
    ('data:;base64,YWI=\n', 'unable to parse url'),
    ('data:;base64,%59WI=', 'invalid data character'),
    ('data:;base64,YW I=', 'invalid data character'),
    ('data:;base64,YWJj', b'abc'),
    ('data:;base64,', b''),
    ('data:,\x7f', 'unable to parse url'),
    ('data:,a\x00', 'unable to parse url'),
    ('data:;base64,YW\x7fI=', 'unable to parse url'),
    ('data:;BASE64,YWI=', 'expected base64, got BASE64'),
    ('data:;Base64,YWI=', 'expected base64, got Base64'),
    ('data:;a=b;base64;c=d,x', 'invalid character for parameter attribute'),
    ('data:;base64;base64,YWI=', 'invalid character for parameter attribute'),
    ('data:,a|b', 'invalid data character'),
    ('data:,a^b', 'invalid data character'),
    ('data:,a`b', 'invalid data character'),
    ('data:,a\\b', 'invalid data character'),
    ('data:,a<b', 'invalid data character'),
    ('data:,a"b', 'invalid data character'),
    ('data:,a}b', 'invalid data character'),
    ('data:,a]b', 'invalid data character'),
    ('data:text/plain;a="\\",x', 'unclosed quoted string'),
    ('data:;a="b",x', b'x'),
    ('data:;a=b,x', b'x'),
    ('data:;=b,x', 'unterminated parameter sequence'),
    ('data:;a==b,x', 'invalid character for parameter value'),
    ('data:;a=b=c,x', 'invalid character for parameter value'),
    ('data:;a="b""c",x', 'expected semicolon or comma'),
    ('data:;a="b"d,x', 'expected semicolon or comma'),
]  # fmt: skip


@pytest.mark.parametrize(("url", "expected"), CASES)
def test_each_url_is_read_as_ignition_reads_it(url: str, expected: bytes | str) -> None:
    if isinstance(expected, bytes):
        assert decode_data_url(url) == expected
    else:
        with pytest.raises(DecodeError) as e:
            decode_data_url(url)
        assert e.value.detail == expected


@pytest.mark.skipif(shutil.which("ignition-validate") is None, reason="needs ignition-validate")
def test_the_grammar_table_is_ignitions_own_verdict(tmp_path: Path) -> None:
    files = [
        {"path": f"/etc/f{i}", "contents": {"source": url}} for i, (url, _) in enumerate(CASES)
    ]
    path = tmp_path / "all.ign"
    path.write_text(json.dumps({"ignition": {"version": "3.3.0"}, "storage": {"files": files}}))
    done = subprocess.run(
        ["ignition-validate", str(path)], capture_output=True, text=True, timeout=60, check=False
    )
    said = {
        int(m[1]): m[2]
        for m in re.finditer(
            r"files\.(\d+)\.contents\.source, line \d+ col \d+: (.*)", done.stdout + done.stderr
        )
    }
    wanted = {i: e for i, (_, e) in enumerate(CASES) if isinstance(e, str)}
    assert said == wanted


@pytest.mark.parametrize("payload", ["YWI", "YW=I", "Y", "===="])
def test_a_badly_padded_base64_payload_is_refused(payload: str) -> None:
    with pytest.raises(DecodeError) as e:
        decode_data_url("data:;base64," + payload)
    assert e.value.detail.startswith("invalid base64 data in data URL: ")


@pytest.mark.parametrize(("url", "scheme"), [("https://h/x", '"https"'), ("nocolon", '"nocolon"'),
                                              ("Data:,x", None), ("DATA:,x", None)])  # fmt: skip
def test_only_data_urls_are_read(url: str, scheme: str | None) -> None:
    with pytest.raises(DecodeError) as e:
        decode_data_url(url)
    if scheme is not None:
        assert e.value.detail == f"only data: URLs are supported, got {scheme}"
    else:
        assert e.value.detail == "missing data prefix"


def test_gzip_contents_inflate_and_a_compressed_url_carries_no_timestamp() -> None:
    url = encode_data_url(b"hello " * 50, compress=True)
    raw = decode_data_url(url)
    assert raw[4:8] == b"\0\0\0\0"  # MTIME: the same config renders the same bytes
    assert decompress(raw, "gzip") == b"hello " * 50
    assert decompress(b"plain", "") == b"plain"
    assert decoded_size(raw, "gzip") == 300
    assert decoded_size(b"plain", "") == 5


def test_gzip_past_the_limit_or_cut_short_or_not_gzip_is_refused() -> None:
    raw = gzip.compress(b"x" * 100, mtime=0)
    assert decoded_size(raw, "gzip", limit=100) == 100
    with pytest.raises(DecodeError, match=r"^gzip contents inflate beyond 99 bytes$"):
        decoded_size(raw, "gzip", limit=99)
    for cut in (raw[:-8], raw[:15]):
        with pytest.raises(DecodeError, match=r"^invalid gzip data: truncated stream$"):
            decompress(cut, "gzip")
        with pytest.raises(DecodeError, match=r"^invalid gzip data: truncated stream$"):
            decoded_size(cut, "gzip")
    for fn in (decompress, decoded_size):
        with pytest.raises(DecodeError, match=r"^invalid gzip data: .*header"):
            fn(b"not gzip at all", "gzip")
        with pytest.raises(DecodeError, match=r'^unsupported compression type "bzip2"$'):
            fn(raw, "bzip2")


def test_gzip_contents_larger_than_a_chunk_are_counted_whole() -> None:
    raw = gzip.compress(b"\0" * (3 << 20), mtime=0)
    assert decoded_size(raw, "gzip") == 3 << 20
    assert len(decompress(raw, "gzip")) == 3 << 20
    assert base64.b64decode(encode_data_url(raw).split(",", 1)[1]) == raw
