"""The grammar of a ``data:`` URL as Ignition and upstream read it (pure).

Ignition's ``validateURL`` and upstream's ``DecodeIgnitionFileContents`` both decode with
``github.com/vincent-petithory/dataurl``, which follows RFC 2397 over RFC 2396 strictly:
the payload holds only URL characters (no space, ``<>#"{}|\\^[]`` or backquote, no
control character, nothing beyond ASCII: those must be percent-escaped), a base64
payload only the base64 alphabet and newlines (no percent escapes), a media type is
``type/subtype`` with a known top-level type or an ``x-`` token, and every parameter is
``attribute=value``. :func:`split` walks the same grammar and refuses with the same
words; the caller decodes the payload it returns.
"""

from __future__ import annotations

import binascii
import re

from mcd.model.errors import DecodeError

PREFIX = "data:"
_TSPECIALS = frozenset('()<>@,;:\\"/[]?=')
_NOT_URL_CHARS = frozenset(' <>#"{}|\\^[]`')
_DISCRETE = ("text", "image", "audio", "video", "application", "message", "multipart")


def is_token(c: str) -> bool:
    """RFC 2045 token character: printable ASCII, not a space, not a tspecial."""
    return " " < c < "\x7f" and c not in _TSPECIALS


def is_url_char(c: str) -> bool:
    return " " <= c < "\x7f" and c not in _NOT_URL_CHARS


class _Scan:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def take_token(self) -> str:
        start = self.pos
        while self.pos < len(self.text) and is_token(self.text[self.pos]):
            self.pos += 1
        return self.text[start : self.pos]


def _fail(message: str) -> DecodeError:
    return DecodeError(message)


def _media_type(s: _Scan) -> None:
    """``type/subtype`` after the prefix (the scanner at its first character)."""
    start = s.pos
    x_token = s.text[start : start + 2].lower() == "x-"
    if s.peek() in "xX":
        # the library steps over the character after an x unchecked
        s.pos += 1 + (len(s.text) > start + 1)
    s.take_token()
    nxt = s.peek()
    if nxt == "":
        raise _fail("missing media type slash")
    if nxt != "/":
        raise _fail("invalid character for media type")
    if not (x_token or s.text[start : s.pos].startswith(_DISCRETE)):
        raise _fail("invalid media type")
    s.pos += 1
    s.take_token()
    nxt = s.peek()
    if nxt == "":
        raise _fail("incomplete media type")
    if nxt not in ";,":
        raise _fail("invalid character for media subtype")


def _quoted_value(s: _Scan) -> None:
    start = s.pos = s.pos + 1  # past the opening quote
    while True:
        c = s.peek()
        if c == "":
            raise _fail("unclosed quoted string")
        if c > "\x7f":
            raise _fail("invalid character for parameter value")
        s.pos += 1
        if c == '"':
            break
        if c == "\\":
            esc = s.peek()
            if esc > "\x7f":
                raise _fail("invalid escaped character")
            s.pos += len(esc)
    if not _go_unquotable(s.text[start : s.pos - 1]):
        raise _fail("invalid syntax")  # Go's strconv.Unquote on the value


_SIMPLE_ESCAPES = frozenset('abfnrtv\\"')


def _go_unquotable(body: str) -> bool:
    """Whether Go's ``strconv.Unquote`` reads ``"body"`` (ASCII only here)."""
    i, n = 0, len(body)
    while i < n:
        c = body[i]
        i += 1
        if c == "\n":
            return False
        if c != "\\":
            continue
        esc = body[i : i + 1]
        i += 1
        if esc in _SIMPLE_ESCAPES and esc:
            continue
        digits = {"x": 2, "u": 4, "U": 8}.get(esc)
        if digits:
            hexes = body[i : i + digits]
            if len(hexes) < digits or not all(h in _HEX for h in hexes):
                return False
            value = int(hexes, 16)
            if esc != "x" and (value > 0x10FFFF or 0xD800 <= value <= 0xDFFF):
                return False
            i += digits
        elif esc and esc in "01234567":
            octal = body[i - 1 : i + 2]
            if len(octal) < 3 or not all(o in "01234567" for o in octal) or int(octal, 8) > 255:
                return False
            i += 2
        else:
            return False
    return True


def _parameters(s: _Scan) -> bool:
    """``;attr=value`` pairs up to the comma, then an optional ``;base64``; True if base64."""
    while s.peek() == ";":
        s.pos += 1
        first = s.peek()
        if first in ("", "=", ","):
            raise _fail("unterminated parameter sequence")
        attr = s.take_token()
        if not attr:
            raise _fail("invalid character for parameter attribute")
        nxt = s.peek()
        if nxt == ",":
            if attr != "base64":
                raise _fail(f"expected base64, got {attr}")
            return True
        if nxt == "":
            raise _fail("unterminated parameter sequence")
        if nxt != "=":
            raise _fail("invalid character for parameter attribute")
        s.pos += 1
        c = s.peek()
        if c == "":
            raise _fail("missing comma before data")
        if c == '"':
            _quoted_value(s)
        elif is_token(c):
            value = s.take_token()
            if s.peek() == "":
                raise _fail("missing comma before data")
            if s.peek() in ";,":
                unescape(value)  # an unquoted value is RFC 2396-escaped too
        else:
            raise _fail("invalid character for parameter value")
        nxt = s.peek()
        if nxt == "":
            raise _fail("missing comma before data")
        if nxt not in ";,":
            raise _fail(
                "expected semicolon or comma"
                if s.text[s.pos - 1] == '"'
                else "invalid character for parameter value"
            )
    return False


def _url_parse_problem(url: str) -> bool:
    """Whether Go's ``url.Parse`` refuses ``url`` (run by Ignition before the data URL is
    read): a control character before the fragment, a bad escape in the fragment, or in
    the path when the rest is a path (``data:/...``)."""
    before, hash_, fragment = url.partition("#")
    if _CONTROL.search(before):
        return True
    if hash_ and _bad_escape(fragment):
        return True
    return before[len(PREFIX) :].startswith("/") and _bad_escape(before)


def _bad_escape(text: str) -> bool:
    return _BAD_ESCAPE.search(text) is not None


def split(url: str) -> tuple[bool, str]:
    """``(is_base64, payload)`` of a ``data:`` URL whose header (up to the data comma) the
    grammar allows; :class:`DecodeError` with the library's own words otherwise. The payload
    is not scanned here: :func:`payload_problem` judges it when decoding fails, so a valid
    payload is read once, by the decoder.

    A header the grammar accepted before (:data:`_ACCEPTED`) is not walked again: the walk
    reads nothing past the data comma it stops at, so any URL beginning with that very
    header (through that comma) is read the same way. Only the text up to the URL's first
    comma is looked up; a header with a comma of its own (a quoted value) is always walked."""
    comma = url.find(",")
    if comma > 0:
        is_base64 = _ACCEPTED.get(url[: comma + 1])
        if is_base64 is not None:
            return is_base64, url[comma + 1 :]
    try:
        is_base64, payload = _split(url)
    except DecodeError:
        if _url_parse_problem(url):  # Go's url.Parse speaks first
            raise _fail("unable to parse url") from None
        raise
    header = url[: len(url) - len(payload)]
    if len(_ACCEPTED) < _ACCEPTED_KEPT and len(header) <= _ACCEPTED_LONGEST:
        _ACCEPTED[header] = is_base64
    return is_base64, payload


_ACCEPTED: dict[str, bool] = {}
"""Headers (``data:`` through the data comma) :func:`_split` accepted -> whether base64.
A config's files share a handful (``data:,`` and ``data:;base64,`` nearly always)."""
_ACCEPTED_KEPT = 64
_ACCEPTED_LONGEST = 256


def _split(url: str) -> tuple[bool, str]:
    if not url.startswith(PREFIX):
        raise _fail("missing data prefix")
    s = _Scan(url)
    s.pos = len(PREFIX)
    first = s.peek()
    if first == "":
        raise _fail("missing comma before data")
    if first not in ";,":
        if not is_token(first):
            raise _fail("invalid character after data prefix")
        _media_type(s)
    is_base64 = _parameters(s)
    if s.peek() != ",":
        raise _fail("missing comma before data")
    return is_base64, url[s.pos + 1 :]


def payload_problem(url: str, is_base64: bool, payload: str) -> str | None:
    """What Ignition says of the payload (after the header passed), or None when every
    character is one the grammar allows."""
    if _url_parse_problem(url):
        return "unable to parse url"
    if not (_BASE64_PAYLOAD if is_base64 else _URL_PAYLOAD).fullmatch(payload):
        return "invalid data character"
    return None


def url_payload(payload: str) -> bool:
    """Every character of a plain payload one RFC 2396 allows in a URL."""
    return _URL_PAYLOAD.fullmatch(payload) is not None


def check_payload(url: str, is_base64: bool, payload: str) -> None:
    problem = payload_problem(url, is_base64, payload)
    if problem:
        raise _fail(problem)


def unescape(payload: str) -> bytes:
    """RFC 2396 unescaping of a checked payload: ``%XX`` pairs, nothing else special."""
    bad = _BAD_ESCAPE.search(payload)
    if bad is not None:
        pair = payload[bad.start() + 1 : bad.start() + 3]
        if len(pair) < 2 and all(h in _HEX for h in pair):
            raise _fail("rfc2396: unexpected end of unescape sequence")
        raise _fail("rfc2396: invalid char 0x25 in unescape sequence")
    if "%" not in payload:
        return payload.encode("ascii")
    # every escape is a valid %XX and nothing else is special: quoted-printable's decoder
    # (C) reads the same bytes once '=' is escaped and '%' spelled '=' (no line breaks or
    # spaces can be in a checked payload)
    return binascii.a2b_qp(payload.replace("=", "=3D").replace("%", "="))


_HEX = frozenset("0123456789abcdefABCDEF")
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_BASE64_PAYLOAD = re.compile(r"[A-Za-z0-9+/=\n]*")
_URL_PAYLOAD = re.compile(r"[!$-;=?-Z_a-z~]*")
"""RFC 2396 URL characters: printable ASCII but space, ``<>#"{}|\\^[]`` and backquote."""
