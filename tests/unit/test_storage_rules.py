"""Ignition's rules for the storage sections mcd never writes (issue 32): a malformed one is
refused as Ignition (and upstream, which parses with it) refuses it; the table is Ignition
2.14's verdict, re-checked live where ``ignition-validate`` is installed."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from mcd.model import gate
from mcd.model.machineconfig import machine_config_from_object
from tests.builders import mc_doc

CASES: list[tuple[dict[str, Any], str | None]] = [
    ({"raid": [{"name": "md0", "level": "raid1", "devices": ["/dev/sda", "/dev/sdb"]}]}, None),
    ({"raid": [{"name": "md0", "devices": ["/dev/sda"]}]}, "raid[0].level: raid level is required"),
    ({"raid": [{"name": "md0", "level": "raid9", "devices": ["/dev/sda"]}]},
     "raid[0].level: unrecognized raid level"),
    ({"raid": [{"name": "md0", "level": "raid0", "spares": 1, "devices": ["/dev/sda"]}]},
     "raid[0].level: spares unsupported for linear and raid0 arrays"),
    ({"raid": [{"name": "md0", "level": "raid1"}]}, "raid[0].devices: raid devices required"),
    ({"disks": [{"device": "/dev/sdb", "partitions": [{"label": "data"}]}]}, None),
    ({"disks": [{"wipeTable": True}]}, "disks[0].device: disk device is required"),
    ({"disks": [{"device": "/dev/sdb", "partitions": [{"sizeMiB": 10}]}]},
     "disks[0].partitions[0]: a partition number >= 1 or a label must be specified"),
    ({"filesystems": [{"device": "/dev/sdb1", "format": "xfs", "path": "/var/data"}]}, None),
    ({"filesystems": [{"device": "/dev/sdb1", "format": "ntfs"}]},
     "filesystems[0].format: invalid filesystem format"),
    ({"filesystems": [{"device": "dev/sdb1", "format": "xfs"}]},
     "filesystems[0].device: path not absolute"),
    ({"filesystems": [{"device": "/dev/sdb1", "path": "/var/data"}]},
     "filesystems[0].format: format cannot be empty when path, label, uuid, wipeFilesystem, "
     "options, or mountOptions is specified"),
    ({"filesystems": [{"device": "/dev/sdb1", "format": "xfs", "label": "a-very-long-label"}]},
     "filesystems[0].label: filesystem labels cannot be longer than 12 characters when using xfs"),
    ({"luks": [{"name": "a/b", "device": "/dev/sdb"}]},
     "luks[0].name: device names cannot contain slashes"),
    ({"luks": [{"name": "root"}]}, "luks[0].device: disk device is required"),
    ({"links": [{"path": "/etc/l", "target": "/etc/t"}]}, None),
    ({"links": [{"path": "/etc/l"}]}, "links[0].target: link target is required"),
    ({"directories": [{"path": "/etc//d"}]}, "directories[0].path: path is not fully simplified"),
    ({"directories": [{"path": "/etc/d"}], "links": [{"path": "/etc/d", "target": "/x"}]},
     "links[0]: duplicate entry defined"),
]  # fmt: skip


def _doc(storage: dict[str, Any], version: str = "3.4.0") -> dict[str, Any]:
    return mc_doc(storage=storage, version=version)


@pytest.mark.parametrize(("storage", "problem"), CASES)
def test_storage_sections_are_judged_as_ignition_judges_them(
    storage: dict[str, Any], problem: str | None
) -> None:
    found = gate.problems(machine_config_from_object(_doc(storage)))
    assert found == ([] if problem is None else [f"spec.config.storage.{problem}"])


@pytest.mark.skipif(shutil.which("ignition-validate") is None, reason="needs ignition-validate")
def test_the_table_is_ignitions_own_verdict(tmp_path: Path) -> None:
    for i, (storage, problem) in enumerate(CASES):
        path = tmp_path / f"{i}.ign"
        path.write_text(json.dumps(_doc(storage, "3.3.0")["spec"]["config"]))
        done = subprocess.run(["ignition-validate", str(path)], capture_output=True, text=True,
                              check=False, timeout=60)  # fmt: skip
        assert (done.returncode == 1) == (problem is not None), (storage, done.stdout)
        if problem is not None:
            assert problem.split(": ", 1)[1] in done.stdout, (storage, done.stdout)
