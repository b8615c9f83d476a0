"""The Accept negotiation, as a table mirroring upstream's ``TestAcceptHeaders``
(``pkg/server/api_test.go``), plus the cases upstream leaves out."""

from __future__ import annotations

import pytest

from mcd.model.ignition.accept import (
    AcceptValue,
    UnsupportedAcceptError,
    Version,
    parse_accept,
    spec_version,
)

IGN = "vnd.coreos.ignition+json"
ANY = AcceptValue("*", "*", None, 0.1)


def ign(version: Version | None, q: float = 1.0) -> AcceptValue:
    return AcceptValue("application", IGN, version, q)


# name, header, parsed values, version served (None: 400)
UPSTREAM = [
    (
        "IgnV0",
        "application/vnd.coreos.ignition+json; version=2.4.0, "
        "application/vnd.coreos.ignition+json; version=1; q=0.5, */*; q=0.1",
        [ign(Version(2, 4, 0)), ign(None, 0.5), ANY],
        "2.2.0",
    ),
    *(
        (
            f"IgnV2_3{m}",
            f"application/vnd.coreos.ignition+json;version=3.{m}.0, */*;q=0.1",
            [ign(Version(3, m, 0)), ANY],
            f"3.{m}.0",
        )
        for m in (5, 4, 3, 2, 1)
    ),
    ("IgnNoVersion", "application/vnd.coreos.ignition+json", [ign(None)], "2.2.0"),
    ("Text", "text/plain", [AcceptValue("text", "plain", None, 1.0)], "2.2.0"),
    ("Invalid", "an-invalid-accept-header", [], "2.2.0"),
    (
        "IgnV3_unsupported_newer_minor_falls_back_to_max",
        "application/vnd.coreos.ignition+json;version=3.99.0, */*;q=0.1",
        [ign(Version(3, 99, 0)), ANY],
        "3.5.0",
    ),
    (
        "IgnV4_unsupported_major_errors",
        "application/vnd.coreos.ignition+json;version=4.0.0, */*;q=0.1",
        [ign(Version(4, 0, 0)), ANY],
        None,
    ),
]

MORE = [
    ("empty header (curl without -H)", "", [], "2.2.0"),
    ("curl's */*", "*/*", [AcceptValue("*", "*", None, 1.0)], "2.2.0"),
    (
        "Ignition 2.14 as sent",
        "application/vnd.coreos.ignition+json;version=3.3.0, */*;q=0.1",
        [ign(Version(3, 3, 0)), ANY],
        "3.3.0",
    ),
    (
        "3.0 is served (upstream: 500)",
        "application/vnd.coreos.ignition+json;version=3.0.0",
        [ign(Version(3, 0, 0))],
        "3.0.0",
    ),
    (
        "patch and pre-release of a served minor",
        "application/vnd.coreos.ignition+json;version=3.4.1-experimental",
        [ign(Version(3, 4, 1, "experimental"))],
        "3.4.0",
    ),
    (
        "2.1 is not served",
        "application/vnd.coreos.ignition+json;version=2.1.0",
        [ign(Version(2, 1, 0))],
        None,
    ),
    (
        "1.0.0 is not served",
        "application/vnd.coreos.ignition+json;version=1.0.0",
        [ign(Version(1, 0, 0))],
        None,
    ),
    (
        "a short version is no version",
        "application/vnd.coreos.ignition+json;version=3.2",
        [ign(None)],
        "2.2.0",
    ),
    (
        "higher q first",
        "application/vnd.coreos.ignition+json;version=3.1.0;q=0.2, "
        "application/vnd.coreos.ignition+json;version=3.4.0;q=0.9",
        [ign(Version(3, 4, 0), 0.9), ign(Version(3, 1, 0), 0.2)],
        "3.4.0",
    ),
    (
        "equal q keep their order",
        "application/vnd.coreos.ignition+json;version=3.1.0, "
        "application/vnd.coreos.ignition+json;version=3.4.0",
        [ign(Version(3, 1, 0)), ign(Version(3, 4, 0))],
        "3.1.0",
    ),
    (
        "first valid parameter counts",
        "application/vnd.coreos.ignition+json;version=x;version=3.2.0;q=x;q=0.5",
        [ign(Version(3, 2, 0), 0.5)],
        "3.2.0",
    ),
    (
        "other subtype with a version",
        "application/json;version=3.2.0",
        [AcceptValue("application", "json", Version(3, 2, 0), 1.0)],
        "2.2.0",
    ),
    (
        "NaN q is no q",
        "application/vnd.coreos.ignition+json;version=3.2.0;q=nan",
        [ign(Version(3, 2, 0))],
        "3.2.0",
    ),
]


@pytest.mark.parametrize(
    ("name", "header", "values", "served"), UPSTREAM + MORE, ids=[c[0] for c in UPSTREAM + MORE]
)
def test_accept(name: str, header: str, values: list[AcceptValue], served: str | None) -> None:
    assert parse_accept(header) == values
    if served is None:
        with pytest.raises(UnsupportedAcceptError):
            spec_version(header)
    else:
        assert spec_version(header) == served


def test_a_huge_header_is_cut_and_the_error_does_not_quote_it() -> None:
    header = "application/vnd.coreos.ignition+json;version=9.0.0," + "x/y," * 300_000
    assert len(parse_accept(header)) <= 64
    with pytest.raises(UnsupportedAcceptError) as e:
        spec_version(header)
    assert len(str(e.value)) < 100
