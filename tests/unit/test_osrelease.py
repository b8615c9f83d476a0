"""os-release parsing for ``mcd_host_os_and_version`` (upstream classification)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcd.host.errors import HostError
from mcd.host.osupdate.osrelease import parse_os_release, read_os_release
from mcd.host.rootfs import Root

RHCOS = 'NAME="Red Hat Enterprise Linux CoreOS"\nID="rhcos"\nVARIANT_ID=coreos\nVERSION_ID="9.6"\nRHEL_VERSION=9.6\n'


def test_rhcos_label_and_version(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/os-release").write_text(RHCOS)
    release = read_os_release(Root(tmp_path))
    assert (release.label, release.os_version) == ("RHCOS", "9.6")
    assert release.is_el and release.is_coreos_variant


def test_falls_back_to_usr_lib_and_fails_clearly(tmp_path: Path) -> None:
    with pytest.raises(HostError, match="checking operating system"):
        read_os_release(Root(tmp_path))
    (tmp_path / "usr/lib").mkdir(parents=True)
    (tmp_path / "usr/lib/os-release").write_text("ID=fedora\nVARIANT_ID=coreos\nVERSION_ID=41\n")
    release = read_os_release(Root(tmp_path))
    assert (release.label, release.os_version, release.is_el) == ("FEDORA", "41", False)


def test_quotes_comments_and_garbage() -> None:
    values = parse_os_release(
        '# c\nID=\'debian\'\nBROKEN\nPRETTY_NAME="Debian GNU/Linux 12"\nX="unterminated\n'
    )
    assert values == {"ID": "debian", "PRETTY_NAME": "Debian GNU/Linux 12"}


@given(st.text(max_size=400))
def test_never_crashes(text: str) -> None:
    assert isinstance(parse_os_release(text), dict)
