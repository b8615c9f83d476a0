"""Decode Ignition file contents: RFC 2397 ``data:`` URLs and gzip compression."""

from __future__ import annotations

import base64
import binascii
import zlib

from mcd.model.errors import DecodeError
from mcd.model.ignition import dataurl_lex
from mcd.model.text import goquote

MAX_DECOMPRESSED = 256 * 1024 * 1024
"""Refuse gzip contents that inflate beyond this: a bomb, not a config file."""

SUPPORTED_COMPRESSION = ("", "gzip")


def decode_data_url(url: str) -> bytes:
    """Return the bytes of a ``data:`` URL, base64 or percent-encoded, read as strictly as
    Ignition and upstream read it (:mod:`mcd.model.ignition.dataurl_lex`).

    Raises ``DecodeError`` for anything that is not a well-formed data URL.
    """
    colon = url.find(":")  # not partition: that copies the whole payload once more
    if colon < 0 or url[:colon].lower() != "data":
        shown = url[:colon] if colon >= 0 else url[:20]
        raise DecodeError(f"only data: URLs are supported, got {goquote(shown)}")
    is_base64, payload = dataurl_lex.split(url)
    if not is_base64:
        if not dataurl_lex.url_payload(payload):
            dataurl_lex.check_payload(url, is_base64, payload)
        return dataurl_lex.unescape(payload)
    try:  # strict: only the alphabet and its padding, as Go's base64.StdEncoding; an ASCII
        # str is read as it is (no bytes copy), anything else is refused (ValueError)
        return binascii.a2b_base64(payload, strict_mode=True)
    except (binascii.Error, ValueError) as e:
        dataurl_lex.check_payload(url, is_base64, payload)
        raise DecodeError(f"invalid base64 data in data URL: {e}") from e


def decompress(data: bytes, compression: str) -> bytes:
    """Apply the Ignition ``compression`` field (``""`` or ``gzip``)."""
    if compression == "":
        return data
    if compression != "gzip":
        raise DecodeError(f"unsupported compression type {goquote(compression)}")
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(data, MAX_DECOMPRESSED + 1)
    except zlib.error as e:
        raise DecodeError(f"invalid gzip data: {e}") from e
    if len(out) > MAX_DECOMPRESSED or inflater.unconsumed_tail:
        raise DecodeError(f"gzip contents inflate beyond {MAX_DECOMPRESSED} bytes")
    if not inflater.eof:
        raise DecodeError("invalid gzip data: truncated stream")
    return out


CHUNK = 1 << 20


def decoded_size(data: bytes, compression: str, limit: int = MAX_DECOMPRESSED) -> int:
    """The size ``data`` decodes to, inflated a chunk at a time and never kept whole:
    memory stays at one chunk however the data inflates. Past ``limit``: ``DecodeError``."""
    if compression == "":
        return len(data)
    if compression != "gzip":
        raise DecodeError(f"unsupported compression type {goquote(compression)}")
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    size, pending = 0, data
    try:
        while not inflater.eof:
            out = inflater.decompress(pending, CHUNK)
            size += len(out)
            if size > limit:
                raise DecodeError(f"gzip contents inflate beyond {limit} bytes")
            pending = inflater.unconsumed_tail
            if not out and not pending:
                break  # all input used, nothing more comes out: cut short
    except zlib.error as e:
        raise DecodeError(f"invalid gzip data: {e}") from e
    if not inflater.eof:
        raise DecodeError("invalid gzip data: truncated stream")
    return size


def encode_data_url(data: bytes, *, compress: bool = False) -> str:
    """Build a base64 data URL; the inverse of ``decode_data_url`` (used by tools and tests)."""
    if compress:
        import gzip  # noqa: PLC0415  (tools and tests only; start-up of the commands)

        data = gzip.compress(data, mtime=0)
    return "data:;base64," + base64.b64encode(data).decode("ascii")
