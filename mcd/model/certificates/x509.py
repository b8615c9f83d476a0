"""Just enough PEM and X.509 to do what upstream's certificate writer asks of Go's
``pem.Decode`` and ``x509.ParseCertificate``: find the first PEM block of a text, check that
its bytes are a DER certificate (``Certificate ::= SEQUENCE { tbsCertificate, signatureAlgorithm,
signatureValue }`` with the tbsCertificate's fields in order) and read the subject's common name.

A malformed certificate is a :class:`ValueError`; nothing here trusts or verifies anything.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass

_PEM = re.compile(rb"-----BEGIN ([^\r\n-]*)-----\r?\n(.*?)-----END \1-----", re.DOTALL)
_COMMON_NAME = bytes.fromhex("550403")  # OID 2.5.4.3

SEQUENCE, SET, INTEGER, BIT_STRING, OID = 0x30, 0x31, 0x02, 0x03, 0x06
_STRINGS = {0x0C, 0x13, 0x14, 0x16, 0x1E, 0x1C}  # UTF8, Printable, T61, IA5, BMP, Universal


@dataclass(frozen=True)
class Block:
    type: str
    data: bytes


def pem_decode(text: bytes) -> Block | None:
    """The first PEM block of ``text`` (Go ``pem.Decode``), None when there is none."""
    found = _first_block(text)
    return found[0] if found is not None else None


def _first_block(text: bytes) -> tuple[Block, bytes] | None:
    """The first PEM block of ``text`` and the text after it."""
    for match in _PEM.finditer(text):
        body = match.group(2)
        if b":" in body.split(b"\n\n", 1)[0] and b"\n\n" in body:  # RFC 1421 headers
            body = body.split(b"\n\n", 1)[1]
        try:
            data = base64.b64decode(b"".join(body.split()), validate=True)
        except (binascii.Error, ValueError):
            continue
        return Block(match.group(1).decode("ascii", "replace"), data), text[match.end() :]
    return None


def pem_blocks(text: bytes) -> list[Block]:
    """Every well-formed PEM block of ``text``, in order (Go's ``pem.Decode`` in a loop)."""
    blocks, rest = [], text
    while (block := _first_block(rest)) is not None:
        blocks.append(block[0])
        rest = block[1]
    return blocks


def _tlv(der: bytes, at: int) -> tuple[int, bytes, int]:
    """(tag, content, next offset) of the DER element at ``at``."""
    if at + 2 > len(der):
        raise ValueError("truncated element")
    tag, first = der[at], der[at + 1]
    at += 2
    if first < 0x80:
        length = first
    else:
        count = first & 0x7F
        if count == 0 or count > 4 or at + count > len(der):
            raise ValueError("invalid length")
        length = int.from_bytes(der[at : at + count], "big")
        at += count
    if at + length > len(der):
        raise ValueError("truncated element")
    return tag, der[at : at + length], at + length


def _children(content: bytes) -> list[tuple[int, bytes]]:
    out, at = [], 0
    while at < len(content):
        tag, value, at = _tlv(content, at)
        out.append((tag, value))
    return out


def _expect(item: tuple[int, bytes], tag: int, what: str) -> bytes:
    if item[0] != tag:
        raise ValueError(f"malformed {what}")
    return item[1]


def common_name(der: bytes) -> str:
    """The subject's common name of a DER certificate ('' when it has none)."""
    tag, cert, end = _tlv(der, 0)
    if tag != SEQUENCE or end != len(der):
        raise ValueError("malformed certificate")
    parts = _children(cert)
    if len(parts) != 3:
        raise ValueError("malformed certificate")
    tbs = _children(_expect(parts[0], SEQUENCE, "tbs certificate"))
    _expect(parts[1], SEQUENCE, "signature algorithm")
    _expect(parts[2], BIT_STRING, "signature")
    if tbs and tbs[0][0] == 0xA0:  # [0] EXPLICIT version
        tbs = tbs[1:]
    if len(tbs) < 6:
        raise ValueError("malformed tbs certificate")
    _expect(tbs[0], INTEGER, "serial number")
    for i, what in ((1, "signature algorithm"), (2, "issuer"), (3, "validity")):
        _expect(tbs[i], SEQUENCE, what)
    subject = _expect(tbs[4], SEQUENCE, "subject")
    _expect(tbs[5], SEQUENCE, "public key info")
    name = ""
    for rdn in _children(subject):
        for attribute in _children(_expect(rdn, SET, "subject")):
            pair = _children(_expect(attribute, SEQUENCE, "subject"))
            if len(pair) != 2:
                raise ValueError("malformed subject")
            if _expect(pair[0], OID, "subject") == _COMMON_NAME and pair[1][0] in _STRINGS:
                raw = pair[1][1]
                name = raw.decode("utf-16-be" if pair[1][0] == 0x1E else "utf-8", "replace")
    return name
