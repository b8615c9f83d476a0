"""Ignition validation rules, as a (config, expected problem) table in the cloud-init style."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcd.model.errors import ConfigValidationError
from mcd.model.ignition import validate
from mcd.model.machineconfig import load_machine_config
from tests.builders import file_entry, mc

CASES: list[tuple[str, dict[str, Any], str]] = [
    (
        "relative path (upstream TestInvalidIgnConfig)",
        {"files": [file_entry("etc/foo", "x")]},
        'storage.files[0].path: path not absolute: "etc/foo"',
    ),
    (
        "dot-dot segment",
        {"files": [file_entry("/etc/../root/.ssh/x", "x")]},
        "storage.files[0].path: path contains a '..' segment: \"/etc/../root/.ssh/x\"",
    ),
    (
        "mode above 0777",
        {"files": [file_entry("/etc/foo", "x", mode=0o4777)]},
        "storage.files[0].mode: invalid mode 04777 for /etc/foo, cannot exceed 0777",
    ),
    (
        "duplicate paths in spec 3",
        {"files": [file_entry("/etc/a", "x"), file_entry("/etc/a", "y")]},
        'storage.files[1].path: duplicate entry defined for "/etc/a"',
    ),
    (
        "bad base64",
        {"files": [{"path": "/etc/a", "contents": {"source": "data:;base64,YWJ"}}]},
        'storage.files[0].contents: could not decode file "/etc/a": invalid base64 data',
    ),
    (
        "remote source",
        {"files": [{"path": "/etc/a", "contents": {"source": "https://example.com/x"}}]},
        'could not decode file "/etc/a": only data: URLs are supported, got "https"',
    ),
    (
        "unknown compression",
        {"files": [{"path": "/etc/a", "contents": {"source": "data:,x", "compression": "xz"}}]},
        'could not decode file "/etc/a": unsupported compression type "xz"',
    ),
    (
        "gzip flag on plain data",
        {"files": [{"path": "/etc/a", "contents": {"source": "data:,x", "compression": "gzip"}}]},
        'could not decode file "/etc/a": invalid gzip data',
    ),
    (
        "hash mismatch",
        {
            "files": [
                {
                    "path": "/etc/a",
                    "contents": {"source": "data:,x", "verification": {"hash": "sha512-00"}},
                }
            ]
        },
        'storage.files[0].contents.verification.hash: hash mismatch for "/etc/a"',
    ),
    (
        "user id and name",
        {"files": [file_entry("/etc/a", "x", user={"id": 0, "name": "root"})]},
        'storage.files[0].user: cannot set both id and name for "/etc/a"',
    ),
    (
        "unit extension",
        {"units": [{"name": "foo.bar", "contents": "[Unit]\n"}]},
        'systemd.units[0].name: invalid systemd unit extension: "foo.bar"',
    ),
    (
        "unit name with slash",
        {"units": [{"name": "../../etc/passwd.service", "contents": "x"}]},
        "systemd.units[0].name: invalid name",
    ),
    (
        "dropin extension",
        {"units": [{"name": "a.service", "dropins": [{"name": "10-x.txt", "contents": "x"}]}]},
        'systemd.units[0].dropins[0].name: invalid systemd unit drop-in extension: "10-x.txt"',
    ),
    (
        "dropin name with slash",
        {"units": [{"name": "a.service", "dropins": [{"name": "x/../../a.conf"}]}]},
        "systemd.units[0].dropins[0].name: invalid name",
    ),
    (
        "duplicate units",
        {"units": [{"name": "a.service"}, {"name": "a.service"}]},
        'systemd.units[1].name: duplicate entry defined for unit "a.service"',
    ),
    (
        "file shadows a unit",
        {
            "files": [file_entry("/etc/systemd/system/a.service", "x")],
            "units": [{"name": "a.service", "contents": "[Unit]\n"}],
        },
        'storage.files[0].path: "/etc/systemd/system/a.service" conflicts with a systemd unit',
    ),
    (
        "duplicate users",
        {"users": [{"name": "core"}, {"name": "core"}]},
        'passwd.users[1].name: duplicate entry defined for user "core"',
    ),
]


@pytest.mark.parametrize(("title", "kwargs", "expected"), CASES, ids=[c[0] for c in CASES])
def test_validation_table(title: str, kwargs: dict[str, Any], expected: str) -> None:
    found = validate.problems(mc(**kwargs).ignition)
    assert any(expected in p for p in found), found


def test_valid_config_has_no_problems() -> None:
    cfg = mc(
        files=[file_entry("/etc/a", "x", mode=0o755)],
        units=[{"name": "a.service", "contents": "[Unit]\n", "dropins": [{"name": "a.conf"}]}],
        users=[{"name": "core", "sshAuthorizedKeys": ["k"]}],
    )
    assert validate.problems(cfg.ignition) == []
    validate.check(cfg.ignition)


def test_every_problem_is_reported_at_once() -> None:
    cfg = mc(files=[file_entry("rel", "x"), file_entry("/etc/a", "x", mode=0o1000)])
    with pytest.raises(ConfigValidationError) as e:
        validate.check(cfg.ignition, "spec.config")
    assert len(e.value.problems) == 2
    assert e.value.problems[0].startswith("spec.config.storage.files[0].path")


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ({"path": "/etc/x", "overwrite": True},
         "storage.files[0].overwrite: overwrite must be false if source is unspecified"),
        ({"path": "/etc/x", "contents": {"verification": {"hash": "sha512-" + "0" * 128}}},
         "storage.files[0].contents.verification.hash: "
         "source must be specified if verification is specified"),
    ],
)  # fmt: skip
def test_ignition_v3_resource_rules(entry: dict[str, object], problem: str) -> None:
    """Ignition's own File.validateOverwrite and Resource.Validate, which upstream's parser
    (ParseAndConvertConfig) applies to both configs when diffing."""
    cfg = load_machine_config(
        json.dumps({"ignition": {"version": "3.4.0"}, "storage": {"files": [entry]}}).encode()
    ).ignition
    assert problem in validate.problems(cfg)
    v2_doc = {"ignition": {"version": "2.2.0"},
              "storage": {"files": [{**entry, "filesystem": "root"}]}}  # fmt: skip
    v2 = load_machine_config(json.dumps(v2_doc).encode()).ignition
    assert not [p for p in validate.problems(v2) if "source" in p]
