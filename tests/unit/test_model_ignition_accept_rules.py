"""Which spec the server answers a booting Ignition with (model/ignition/accept): the
``Accept`` header read rule for rule as upstream's ``parseAcceptHeader`` and
``detectSpecVersionFromAcceptHeader``, and semantic-version order."""

from __future__ import annotations

import pytest

from mcd.model.ignition.accept import UnsupportedAcceptError, Version, spec_version

IGN = "application/vnd.coreos.ignition+json"


@pytest.mark.parametrize(
    ("header", "served"),
    [
        (f"{IGN};version=3.6.0", "3.5.0"),
        (f"{IGN};version=3.6.0-rc.1", "3.5.0"),
        (f"{IGN};version=3.5.1", "3.5.0"),
        (f"{IGN};version=3.0.0", "3.0.0"),
        (f"{IGN};version=2.2.0", "2.2.0"),
        (f"{IGN};version=2.2.1", "2.2.0"),
        (f"{IGN};version=2.3.0", "2.2.0"),
        (f"{IGN};version=2.2.0-rc.1", "2.2.0"),
        ("", "2.2.0"),
        ("*/*", "2.2.0"),
        (f"text, {IGN};version=3.1.0", "3.1.0"),
        (f"{IGN};foo;version=3.1.0", "3.1.0"),
        (f"{IGN};version=bad;version=3.1.0;version=3.2.0", "3.1.0"),
        (f"{IGN};version=3.1.0;q=0.2, {IGN};version=3.2.0;q=0.5", "3.2.0"),
        (f"{IGN};version=3.1.0;q=x;q=0.1;q=0.9, {IGN};version=3.2.0;q=0.5", "3.2.0"),
        (f"{IGN};version=3.1.0;x=0.9, {IGN};version=3.2.0;q=0.95", "3.1.0"),
        (f"{IGN};version=3.1.0;q=0.5, {IGN};version=3.2.0;q=0.5", "3.1.0"),
        ("a/b/vnd.coreos.ignition+json;version=3.1.0", "2.2.0"),
        (f"application/json;version=3.1.0, {IGN};version=3.3.0", "3.3.0"),
        (",".join(["a/b"] * 64 + [f"{IGN};version=3.1.0"]), "2.2.0"),
        (",".join(["a/b"] * 63 + [f"{IGN};version=3.1.0"]), "3.1.0"),
    ],
)
def test_the_spec_served_for_each_accept_header(header: str, served: str) -> None:
    assert spec_version(header) == served


@pytest.mark.parametrize("version", ["4.0.0", "1.0.0", "2.1.9", "2.1.0-rc.1", "2.0.0"])
def test_a_version_no_spec_answers_is_refused_naming_it(version: str) -> None:
    with pytest.raises(UnsupportedAcceptError) as e:
        spec_version(f"{IGN};version={version}")
    assert str(e.value) == f"unsupported Ignition version in Accept header: {version}"


def test_a_pre_release_sorts_before_its_release_only() -> None:
    assert Version(3, 4, 0, "rc.1").below(Version(3, 4, 0))
    assert not Version(3, 4, 0).below(Version(3, 4, 0, "rc.1"))
    assert not Version(3, 4, 0, "a").below(Version(3, 4, 0, "b"))
    assert not Version(3, 4, 0).below(Version(3, 4, 0))
    assert Version(3, 3, 9).below(Version(3, 4, 0))
    assert str(Version(3, 4, 0, "rc.1")) == "3.4.0-rc.1"
    assert str(Version(3, 4, 0)) == "3.4.0"
