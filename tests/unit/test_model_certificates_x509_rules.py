"""The PEM and X.509 reading the certificate writer needs, as Go's ``pem.Decode`` and
``x509.ParseCertificate`` behave: the first decodable PEM block, RFC 1421 headers skipped, the
subject's common name in any string type (the last one when there are several), and a
malformed certificate refused naming the part that is wrong.

Certificates are built here with a small independent DER encoder, one field at a time."""

from __future__ import annotations

import base64

import pytest

from mcd.model.certificates.x509 import Block, common_name, pem_decode

CN_OID = bytes.fromhex("550403")  # 2.5.4.3 commonName
O_OID = bytes.fromhex("55040a")  # 2.5.4.10 organizationName
UTF8, PRINTABLE, IA5, BMP, INTEGER_TAG = 0x0C, 0x13, 0x16, 0x1E, 0x02


def tlv(tag: int, content: bytes) -> bytes:
    n = len(content)
    if n < 0x80:
        return bytes([tag, n]) + content
    size = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([tag, 0x80 | len(size)]) + size + content


def seq(*items: bytes) -> bytes:
    return tlv(0x30, b"".join(items))


def attribute(oid: bytes, tag: int, value: bytes) -> bytes:
    return tlv(0x31, seq(tlv(0x06, oid), tlv(tag, value)))


def certificate(
    *subject: bytes,
    version: bool = True,
    tbs_extra: tuple[bytes, ...] = (),
    serial: bytes | None = None,
    issuer: bytes | None = None,
    validity: bytes | None = None,
    subject_seq: bytes | None = None,
    spki: bytes | None = None,
    algorithm: bytes | None = None,
    signature: bytes | None = None,
) -> bytes:
    tbs = seq(
        *([tlv(0xA0, tlv(0x02, b"\x02"))] if version else []),
        tlv(0x02, b"\x01") if serial is None else serial,
        seq(tlv(0x06, b"\x2a\x86\x48")),
        seq(attribute(CN_OID, UTF8, b"issuer-ca")) if issuer is None else issuer,
        seq(tlv(0x17, b"260101000000Z"), tlv(0x17, b"270101000000Z")) if validity is None
        else validity,
        seq(*subject) if subject_seq is None else subject_seq,
        seq(seq(tlv(0x06, b"\x2a")), tlv(0x03, b"\x00\x01")) if spki is None else spki,
        *tbs_extra,
    )  # fmt: skip
    return seq(
        tbs,
        seq(tlv(0x06, b"\x2a\x86\x48")) if algorithm is None else algorithm,
        tlv(0x03, b"\x00sig") if signature is None else signature,
    )


def pem(der: bytes, kind: str = "CERTIFICATE", headers: str = "") -> bytes:
    body = base64.encodebytes(der).decode()
    return f"-----BEGIN {kind}-----\n{headers}{body}-----END {kind}-----\n".encode()


@pytest.mark.parametrize(
    ("tag", "raw", "name"),
    [
        (UTF8, b"signer@1700000000", "signer@1700000000"),
        (PRINTABLE, b"kube-apiserver-lb-signer", "kube-apiserver-lb-signer"),
        (IA5, b"ca.example.com", "ca.example.com"),
        (BMP, "caf\xe9 \u65e5\u672c".encode("utf-16-be"), "caf\xe9 \u65e5\u672c"),
        (UTF8, "caf\xe9".encode(), "caf\xe9"),
    ],
)
def test_the_common_name_is_read_in_any_string_type(tag: int, raw: bytes, name: str) -> None:
    assert common_name(certificate(attribute(CN_OID, tag, raw))) == name


def test_a_broken_utf8_name_is_replaced_not_refused() -> None:
    assert common_name(certificate(attribute(CN_OID, UTF8, b"ca\xff"))) == "ca\ufffd"


def test_only_the_common_name_counts_and_the_last_one_wins() -> None:
    subject = (
        attribute(O_OID, UTF8, b"openshift"),
        attribute(CN_OID, UTF8, b"first"),
        attribute(CN_OID, UTF8, b"last"),
        attribute(O_OID, UTF8, b"not a name"),
    )
    assert common_name(certificate(*subject)) == "last"
    assert common_name(certificate(attribute(O_OID, UTF8, b"openshift"))) == ""
    assert common_name(certificate()) == ""
    # a common name that is not a string is not a name
    assert common_name(certificate(attribute(CN_OID, INTEGER_TAG, b"\x05"))) == ""


def test_the_version_field_is_optional() -> None:
    cn = attribute(CN_OID, UTF8, b"v1-cert")
    assert common_name(certificate(cn, version=False)) == "v1-cert"
    extensions = tlv(0xA3, seq())
    assert common_name(certificate(cn, tbs_extra=(extensions,))) == "v1-cert"


@pytest.mark.parametrize("size", [127, 128, 255, 256, 70000])
def test_long_lengths_are_read(size: int) -> None:
    name = "n" * size
    assert common_name(certificate(attribute(CN_OID, UTF8, name.encode()))) == name


@pytest.mark.parametrize(
    ("der", "message"),
    [
        (certificate() + b"\x00", "malformed certificate"),
        (tlv(0x31, certificate()[2:]), "malformed certificate"),
        (seq(seq(), seq()), "malformed certificate"),
        (seq(seq(), seq(), tlv(0x03, b"\x00"), seq()), "malformed certificate"),
        (seq(tlv(0x02, b"\x01"), seq(), tlv(0x03, b"\x00")), "malformed tbs certificate"),
        (seq(seq(tlv(0x02, b"\x01")), seq(), tlv(0x03, b"\x00")), "malformed tbs certificate"),
        (certificate(algorithm=tlv(0x06, b"\x2a")), "malformed signature algorithm"),
        (certificate(signature=seq()), "malformed signature"),
        (certificate(serial=seq()), "malformed serial number"),
        (certificate(issuer=tlv(0x31, b"")), "malformed issuer"),
        (certificate(validity=tlv(0x17, b"260101000000Z")), "malformed validity"),
        (certificate(subject_seq=tlv(0x31, b"")), "malformed subject"),
        (certificate(spki=tlv(0x03, b"\x00")), "malformed public key info"),
        (certificate(seq(seq(tlv(0x06, CN_OID), tlv(UTF8, b"x")))), "malformed subject"),
        (certificate(tlv(0x31, tlv(0x31, b""))), "malformed subject"),
        (certificate(tlv(0x31, seq(tlv(0x06, CN_OID)))), "malformed subject"),
        (certificate(tlv(0x31, seq(tlv(0x04, CN_OID), tlv(UTF8, b"x")))), "malformed subject"),
        (b"", "truncated element"),
        (b"\x30", "truncated element"),
        (b"\x30\x05\x00", "truncated element"),
        (b"\x30\x81", "invalid length"),
        (b"\x30\x82\x01", "invalid length"),
        (b"\x30\x80\x00\x00", "invalid length"),  # BER's indefinite length is not DER
        (b"\x30\x85\x00\x00\x00\x00\x01\x00", "invalid length"),
        (b"\x30\x81\x05\x00", "truncated element"),
    ],
)
def test_a_malformed_certificate_names_the_part_that_is_wrong(der: bytes, message: str) -> None:
    with pytest.raises(ValueError) as e:
        common_name(der)
    assert str(e.value) == message


# -- PEM (Go pem.Decode) ---------------------------------------------------------------------


def test_the_first_decodable_block_is_returned_with_its_type() -> None:
    der = certificate(attribute(CN_OID, UTF8, b"a"))
    text = b"junk\n" + pem(der) + pem(b"second", "RSA PRIVATE KEY")
    assert pem_decode(text) == Block("CERTIFICATE", der)
    assert pem_decode(pem(b"key", "RSA PRIVATE KEY")) == Block("RSA PRIVATE KEY", b"key")


def test_a_block_that_does_not_decode_is_skipped() -> None:
    broken = b"-----BEGIN CERTIFICATE-----\nnot*base64\n-----END CERTIFICATE-----\n"
    assert pem_decode(broken + pem(b"good")) == Block("CERTIFICATE", b"good")
    assert pem_decode(broken) is None


def test_rfc1421_headers_are_skipped() -> None:
    headers = "Proc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,0011\n\n"
    assert pem_decode(pem(b"secret bytes", "RSA PRIVATE KEY", headers)) == Block(
        "RSA PRIVATE KEY", b"secret bytes"
    )
    # a blank line without a header before it is not a header block
    assert pem_decode(pem(b"x" * 100, headers="\n")) == Block("CERTIFICATE", b"x" * 100)


def test_crlf_line_endings_and_mismatched_ends() -> None:
    assert pem_decode(pem(b"windows").replace(b"\n", b"\r\n")) == Block("CERTIFICATE", b"windows")
    mismatched = pem(b"x").replace(b"END CERTIFICATE", b"END PRIVATE KEY")
    assert pem_decode(mismatched) is None
    assert pem_decode(b"") is None


def test_a_type_that_is_not_ascii_is_kept_readable() -> None:
    text = b"-----BEGIN CERT\xe9-----\n" + base64.b64encode(b"x") + b"\n-----END CERT\xe9-----\n"
    assert pem_decode(text) == Block("CERT\ufffd", b"x")
