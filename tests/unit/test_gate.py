"""The one gate (issue 14): paths as Ignition defines them, guards, values (pure; hypothesis).

Every refusal names its field; a password hash is never quoted; a clean, in-range
config passes.
"""

from __future__ import annotations

import gzip
import string
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcd.model import gate
from mcd.model.ignition.dataurl import encode_data_url
from mcd.model.ignition.guards import (
    RHCOS_TOPLEVEL_LINKS,
    file_guard,
    length_problem,
    spelling_problem,
)
from tests.builders import file_entry, mc

SETTINGS = settings(max_examples=300, deadline=None)
name = st.text(string.ascii_lowercase + string.digits + "_-", min_size=1, max_size=12)
clean_paths = st.lists(name, min_size=1, max_size=5).map(lambda parts: "/etc/" + "/".join(parts))


@st.composite
def respelled(draw: st.DrawFn) -> tuple[str, str]:
    """A clean path and one of its other spellings (``//``, ``/./``, ``x/..``, trailing ``/``)."""
    path = draw(clean_paths)
    parts = path.split("/")
    at = draw(st.integers(1, len(parts) - 1))
    how = draw(st.sampled_from(["//", "/./", "/..", "trailing", "lead"]))
    if how == "//":
        spelled = "/".join(parts[:at]) + "//" + "/".join(parts[at:])
    elif how == "/./":
        spelled = "/".join(parts[:at]) + "/./" + "/".join(parts[at:])
    elif how == "/..":
        spelled = "/".join(parts[:at]) + "/x/../" + "/".join(parts[at:])
    elif how == "trailing":
        spelled = path + draw(st.sampled_from(["/", "/."]))
    else:
        spelled = "/" + path
    return path, spelled


def problems_of(**kwargs: Any) -> list[str]:
    return gate.problems(mc("gated", **kwargs))


@SETTINGS
@given(clean_paths)
def test_a_clean_path_passes(path: str) -> None:
    assert spelling_problem(path) is None
    assert problems_of(files=[file_entry(path, "x")]) == []


@SETTINGS
@given(respelled())
def test_every_other_spelling_is_refused_naming_the_field(pair: tuple[str, str]) -> None:
    clean, spelled = pair
    assert spelled != clean
    found = problems_of(files=[file_entry(spelled, "x")])
    assert len(found) == 1
    assert found[0].startswith("spec.config.storage.files[0].path: path ")
    assert any(
        why in found[0]
        for why in ("is not fully simplified", "contains a '..' segment", "must name a file")
    )


@pytest.mark.parametrize(
    "path",
    ["//proc/sysrq-trigger", "/./dev/sda", "//usr/bin/x", "/run//machine-config-daemon-force",
     "/etc//app/app.conf", "/etc/./x"],
)  # fmt: skip
def test_the_issues_respellings_are_refused(path: str) -> None:
    assert problems_of(files=[file_entry(path, "x")]) == [
        f'spec.config.storage.files[0].path: path is not fully simplified: "{path}"'
    ]


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("/proc/sys/kernel/x", 'path "/proc/sys/kernel/x" is on the kernel filesystem /proc'),
        ("/etc/machine-config-daemon/currentconfig",
         'path "/etc/machine-config-daemon/currentconfig" is mcd\'s own state '
         "(/etc/machine-config-daemon/currentconfig)"),
        ("/etc/machine-config-daemon/orig/etc/x.mcdorig",
         'path "/etc/machine-config-daemon/orig/etc/x.mcdorig" is mcd\'s own state '
         "(/etc/machine-config-daemon/orig)"),
        ("/home/core/.ssh/authorized_keys",
         '"/home/core/.ssh/authorized_keys" conflicts with the SSH keys of user core '
         "(set passwd.users[].sshAuthorizedKeys)"),
    ],
)  # fmt: skip
def test_guards_refuse_with_their_reason(path: str, why: str) -> None:
    assert problems_of(files=[file_entry(path, "x")]) == [
        f"spec.config.storage.files[0].path: {why}"
    ]


@pytest.mark.parametrize(
    "path",
    ["/etc/machine-config-daemon/no-reboot/containers-gpg.pub",
     "/etc/machine-config-daemon/policy-for-old-podman.json",
     "/etc/systemd/system.conf.d/10-x.conf", "/etc/systemd/system/notes.txt",
     "/etc/systemd/system/multi-user.target.wants/x.conf",
     # upstream's own templates write this dropin as a storage file
     "/etc/systemd/system/kubelet.service.d/20-logging.conf",
     "/etc/systemd/system/other.service"],
)  # fmt: skip
def test_upstreams_own_paths_stay_allowed(path: str) -> None:
    assert file_guard(path) is None
    assert problems_of(files=[file_entry(path, "x")]) == []


def test_rhcos_links_are_clean_paths() -> None:
    for link in RHCOS_TOPLEVEL_LINKS:
        assert spelling_problem(link) is None


@SETTINGS
@given(st.integers(2**32 - 1, 2**80), st.sampled_from(["user", "group"]))
def test_ids_past_the_range_are_refused(big: int, which: str) -> None:
    entry = file_entry("/etc/x", "x")
    entry[which] = {"id": big}
    found = problems_of(files=[entry])
    assert found == [
        f'spec.config.storage.files[0].{which}.id: id {big} out of range 0..4294967294 for "/etc/x"'
    ]


@SETTINGS
@given(st.integers(0, 2**32 - 2))
def test_ids_in_range_pass(ok: int) -> None:
    assert problems_of(files=[file_entry("/etc/x", "x", user={"id": ok})]) == []


def test_a_name_whose_backup_name_passes_name_max_is_refused() -> None:
    assert length_problem("/etc/" + "a" * 245) is None
    found = problems_of(files=[file_entry("/etc/" + "a" * 250, "x")])
    assert found == [
        "spec.config.storage.files[0].path: a name in the path is 250 bytes; with mcd's backup "
        "suffix .mcdnoorig it would pass NAME_MAX (255 bytes)"
    ]
    long_path = "/etc/" + "/".join(["d" * 200] * 21)
    assert problems_of(files=[file_entry(long_path, "x")]) == [
        "spec.config.storage.files[0].path: the path is too long: its backup path would pass "
        "PATH_MAX (4096 bytes)"
    ]


controls = st.sampled_from(["\x00", "\x01", "\n", "\r", "\x1b", "\x7f", "\t"])


@SETTINGS
@given(
    st.text(string.ascii_letters, max_size=5), controls, st.text(string.ascii_letters, max_size=5)
)
def test_control_characters_in_one_line_values_are_refused(a: str, c: str, b: str) -> None:
    value = a + c + b
    assert problems_of(kernelArguments=[value])[0].startswith("spec.kernelArguments[0]: ")
    assert problems_of(osImageURL=value)[0].startswith("spec.osImageURL: ")
    units = [{"name": value + ".service", "contents": "[Unit]\n"}]
    assert problems_of(units=units)[0].startswith("spec.config.systemd.units[0].name: ")


@SETTINGS
@given(st.text(string.ascii_letters + "$./", min_size=1, max_size=20), controls)
def test_a_bad_password_hash_is_refused_and_never_quoted(secret: str, c: str) -> None:
    marker = "S3CRET" + secret
    users = [{"name": "core", "passwordHash": marker + c}]
    found = problems_of(users=users)
    assert len(found) == 1 and found[0].startswith(
        'spec.config.passwd.users[0].passwordHash: invalid password hash for user "core": '
    )
    assert "S3CRET" not in found[0]


def test_unit_text_must_be_utf8_without_control_characters() -> None:
    bad = [{"name": "a.service", "contents": "[Unit]\nDescription=x\x01y\n"}]
    assert problems_of(units=bad) == [
        'spec.config.systemd.units[0].contents: unit "a.service": control character U+0001 '
        "at line 2, column 14"
    ]
    surrogate = [{"name": "a.service", "dropins": [{"name": "x.conf", "contents": "a\ud800"}]}]
    assert problems_of(units=surrogate) == [
        'spec.config.systemd.units[0].dropins[0].contents: dropin "x.conf" of unit "a.service": '
        "not valid UTF-8 at line 1, column 2"
    ]
    fine = [{"name": "a.service", "contents": "[Unit]\r\n\tDescription=é\n"}]
    assert problems_of(units=fine) == []


def test_files_inflating_together_past_the_bound_are_refused() -> None:
    blob = encode_data_url(gzip.compress(b"\0" * (100 << 20)))
    files = [
        {"path": f"/etc/f{i}", "contents": {"source": blob, "compression": "gzip"}}
        for i in range(3)
    ]
    assert problems_of(files=files) == [
        'spec.config.storage.files[2].contents: could not decode file "/etc/f2": the files\' '
        "decoded contents together pass 268435456 bytes"
    ]
