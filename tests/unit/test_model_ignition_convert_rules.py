"""Serving a spec 3.5 config in an older spec (model/ignition/convert; upstream ign-converter):
each field an older spec lacks is refused at every version below the one that added it, in
ign-converter's words naming the target version; what every spec can say passes unchanged."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcd.model.ignition.convert import ConversionError, to_version

Doc = dict[str, Any]

VERSIONS = ["3.5.0", "3.4.0", "3.3.0", "3.2.0", "3.1.0", "3.0.0", "2.2.0"]


def luks(**extra: Any) -> Doc:
    return {"storage": {"luks": [{"name": "l", "device": "/dev/x", **extra}]}}


def file(**extra: Any) -> Doc:
    return {"storage": {"files": [{"path": "/etc/x", **extra}]}}


HTTP = {"source": "https://h/x", "httpHeaders": [{"name": "a", "value": "b"}]}
GZ = {"source": "https://h/c.gz", "compression": "gzip"}

# (what, doc, message's subject, the oldest spec that says it, refused in 2.2 too)
FEATURES: list[tuple[str, Doc, str, str, bool]] = [
    ("cex", luks(cex={"enabled": True}), "'Cex' type", "3.5.0", True),
    ("discard", luks(discard=True), "luks discard", "3.4.0", True),
    ("open options", luks(openOptions=["--perf"]), "luks openOptions", "3.4.0", True),
    (
        "tang advertisement",
        luks(clevis={"tang": [{"url": "http://t", "advertisement": "{}"}]}),
        "tang offline provisioning",
        "3.4.0",
        True,
    ),
    ("setuid file", file(mode=0o4755), "special mode bits", "3.4.0", True),
    (
        "sticky directory",
        {"storage": {"directories": [{"path": "/d", "mode": 0o1777}]}},
        "special mode bits",
        "3.4.0",
        True,
    ),
    ("arn source", file(contents={"source": "arn:aws:s3:::b/k"}), "arn: scheme for s3", "3.4.0", True),
    ("karg exists", {"kernelArguments": {"shouldExist": ["a"]}}, "kernelArguments", "3.3.0", True),
    ("karg gone", {"kernelArguments": {"shouldNotExist": ["b"]}}, "kernelArguments", "3.3.0", True),
    ("luks", luks(), "luks", "3.2.0", True),
    (
        "resize",
        {"storage": {"disks": [{"device": "/dev/sda", "partitions": [{"resize": True}]}]}},
        "partition resize",
        "3.2.0",
        True,
    ),
    ("user gone", {"passwd": {"users": [{"name": "u", "shouldExist": False}]}},
     "users shouldExist", "3.2.0", True),
    ("group gone", {"passwd": {"groups": [{"name": "g", "shouldExist": False}]}},
     "groups shouldExist", "3.2.0", True),
    # 2.2 creates users and groups as 3.2 does: only deleting one has no 2.2 form
    ("user exists", {"passwd": {"users": [{"name": "u", "shouldExist": True}]}},
     "users shouldExist", "3.2.0", False),
    ("headers", file(contents=HTTP), "httpHeaders", "3.1.0", True),
    ("proxy", {"ignition": {"version": "3.5.0", "proxy": {"httpProxy": "http://p"}}},
     "proxy", "3.1.0", True),
    ("merge gz", {"ignition": {"version": "3.5.0", "config": {"merge": [GZ]}}},
     "compression of a config or CA", "3.1.0", False),
    ("replace gz", {"ignition": {"version": "3.5.0", "config": {"replace": GZ}}},
     "compression of a config or CA", "3.1.0", False),
    ("ca gz",
     {"ignition": {"version": "3.5.0", "security": {"tls": {"certificateAuthorities": [GZ]}}}},
     "compression of a config or CA", "3.1.0", False),
    ("sha256", file(contents={"source": "data:,a", "verification": {"hash": "sha256-ab"}}),
     "sha256 verification", "3.1.0", False),
]  # fmt: skip


def cases() -> list[Any]:
    out = []
    for what, doc, subject, oldest, in_v22 in FEATURES:
        for version in VERSIONS:
            refused = version != "2.2.0" and VERSIONS.index(version) > VERSIONS.index(oldest)
            refused = refused or (version == "2.2.0" and in_v22)
            out.append(pytest.param(doc, subject, version, refused, id=f"{what}-{version}"))
    return out


def message(subject: str, version: str) -> str:
    return f"invalid input config: {subject} is not supported in spec v{version[:3]}"


@pytest.mark.parametrize(("doc", "subject", "version", "refused"), cases())
def test_a_field_is_refused_exactly_below_the_spec_that_added_it(
    doc: Doc, subject: str, version: str, refused: bool
) -> None:
    if refused:
        with pytest.raises(ConversionError) as e:
            to_version(doc, version)
        assert str(e.value) == message(subject, version)
    else:
        out = to_version(doc, version)
        assert out["ignition"]["version"] == version


@pytest.mark.parametrize(
    "doc",
    [
        luks(cex={"enabled": True}),
        luks(discard=True),
        file(mode=0o4755),
        luks(),
        file(contents=HTTP),
        {"kernelArguments": {"shouldExist": ["a"]}},
    ],
)
def test_in_its_own_spec_a_config_passes_unchanged_but_for_the_version(doc: Doc) -> None:
    out = to_version(doc, "3.5.0")
    assert out == {**doc, "ignition": {**doc.get("ignition", {}), "version": "3.5.0"}}


@pytest.mark.parametrize("version", ["3.6.0", "4.0.0", "2.3.0", "1.0.0", "3.5", "latest"])
def test_a_version_mcd_does_not_serve_is_refused_by_name(version: str) -> None:
    with pytest.raises(ConversionError) as e:
        to_version({}, version)
    assert str(e.value) == f"cannot convert to spec version {version!r}"


@pytest.mark.parametrize(("version", "kept"), [("3.5.0", True), ("3.3.0", True), ("3.2.0", False),
                                               ("3.0.0", False), ("2.2.0", False)])  # fmt: skip
def test_an_empty_kernel_arguments_section_is_dropped_below_3_3(version: str, kept: bool) -> None:
    doc: Doc = {"kernelArguments": {"shouldExist": [], "shouldNotExist": []}}
    assert ("kernelArguments" in to_version(doc, version)) is kept


@pytest.mark.parametrize("key", ["disks", "raid", "filesystems"])
def test_spec_2_2_refuses_the_storage_mcd_does_not_serve_there(key: str) -> None:
    with pytest.raises(ConversionError) as e:
        to_version({"storage": {key: [{"device": "/dev/sda"}]}}, "2.2.0")
    assert str(e.value) == message(f"storage.{key} (mcd serves them in spec 3 only)", "2.2.0")
    assert to_version({"storage": {key: [{"device": "/dev/sda"}]}}, "3.0.0")["storage"] == {
        key: [{"device": "/dev/sda"}]
    }


def test_spec_2_2_puts_every_entry_on_the_root_filesystem_and_renames_merge() -> None:
    doc = {
        "ignition": {"version": "3.5.0", "config": {"merge": [{"source": "data:,{}"}]}},
        "storage": {
            "files": [
                {"path": "/a", "contents": {"source": "data:,x"}},
                {"path": "/b", "append": [{"source": "data:,y"}]},
            ],
            "directories": [{"path": "/d"}],
            "links": [{"path": "/l", "target": "/a"}],
        },
    }
    out = to_version(doc, "2.2.0")
    assert out == {
        "ignition": {"version": "2.2.0", "config": {"append": [{"source": "data:,{}"}]}},
        "storage": {
            "files": [
                {"path": "/a", "contents": {"source": "data:,x"}, "filesystem": "root"},
                {"path": "/b", "contents": {"source": "data:,y"}, "append": True,
                 "filesystem": "root"},
            ],
            "directories": [{"path": "/d", "filesystem": "root"}],
            "links": [{"path": "/l", "target": "/a", "filesystem": "root"}],
        },
    }  # fmt: skip


@pytest.mark.parametrize(
    "entry",
    [
        {"path": "/etc/x", "append": [{"source": "data:,a"}, {"source": "data:,b"}]},
        {"path": "/etc/x", "contents": {"source": "data:,a"}, "append": [{"source": "data:,b"}]},
    ],
)
def test_spec_2_2_refuses_a_file_with_two_contents_naming_it(entry: Doc) -> None:
    with pytest.raises(ConversionError) as e:
        to_version({"storage": {"files": [entry]}}, "2.2.0")
    assert str(e.value) == message("more than one contents for file '/etc/x'", "2.2.0")


def test_a_config_without_an_ignition_section_gains_the_version() -> None:
    assert to_version({}, "3.1.0") == {"ignition": {"version": "3.1.0"}}
    assert to_version({"storage": {"files": []}}, "2.2.0") == {
        "ignition": {"version": "2.2.0"},
        "storage": {"files": []},
    }


paths = st.text(alphabet="abc/", min_size=1, max_size=8).map(lambda s: "/" + s)


@given(st.lists(paths, max_size=4), st.sampled_from(VERSIONS))
def test_plain_files_convert_to_every_version_and_the_input_stays(
    names: list[str], version: str
) -> None:
    doc = {"ignition": {"version": "3.5.0"}, "storage": {"files": [{"path": n} for n in names]}}
    before = copy.deepcopy(doc)
    out = to_version(doc, version)
    assert doc == before
    assert [f["path"] for f in out["storage"]["files"]] == names
    assert all(("filesystem" in f) is version.startswith("2") for f in out["storage"]["files"])
