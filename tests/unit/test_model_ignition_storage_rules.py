"""Ignition's rules for disks, partitions, filesystems, LUKS, RAID, directories and links
(model/ignition/storage) on every branch: the table is Ignition 2.14's own verdict on each
storage section (``ignition-validate``, recorded; re-checked live where it is installed).
Partition layouts follow ``Disk.Validate``: numbers, overlaps, labels, and a partition to
delete beside one placed by number 0."""

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

# (storage section, every problem Ignition names, under spec.config.storage)
CASES: list[tuple[dict[str, Any], list[str]]] = [
    ({"disks": [{"device": "/dev/sdb", "partitions": "x"}]}, []),
    ({"disks": [{"device": "/dev/sdb", "partitions": [{"number": 1}]}]}, []),
    (
        {"disks": [{"device": "/dev/sdb", "partitions": [{"number": 0}]}]},
        ["disks[0].partitions[0]: a partition number >= 1 or a label must be specified"],
    ),
    ({"disks": [{"device": "/dev/sdb", "partitions": [{"number": 2}]}]}, []),
    ({"disks": [{"device": "/dev/sdb", "partitions": [{"number": -1}]}]}, []),
    ({"disks": [{"device": "/dev/sdb", "partitions": [{"number": 1, "shouldExist": False}]}]}, []),
    (
        {
            "disks": [
                {
                    "device": "/dev/sdb",
                    "partitions": [{"number": 1, "shouldExist": True, "sizeMiB": 5}],
                }
            ]
        },
        [],
    ),
    (
        {
            "disks": [
                {
                    "device": "/dev/sdb",
                    "partitions": [{"number": 1, "shouldExist": False, "label": "a"}],
                }
            ]
        },
        ["disks[0].partitions[0]: shouldExist specified false with other options also specified"],
    ),
    (
        {
            "disks": [
                {
                    "device": "/dev/sdb",
                    "partitions": [
                        {
                            "number": 1,
                            "shouldExist": False,
                            "typeGuid": "0FC63DAF-8483-4772-8E79-3D69D8477DE4",
                        }
                    ],
                }
            ]
        },
        ["disks[0].partitions[0]: shouldExist specified false with other options also specified"],
    ),
    (
        {
            "disks": [
                {
                    "device": "/dev/sdb",
                    "partitions": [
                        {
                            "number": 1,
                            "shouldExist": False,
                            "guid": "0FC63DAF-8483-4772-8E79-3D69D8477DE4",
                        }
                    ],
                }
            ]
        },
        ["disks[0].partitions[0]: shouldExist specified false with other options also specified"],
    ),
    (
        {
            "disks": [
                {
                    "device": "/dev/sdb",
                    "partitions": [{"number": 1, "shouldExist": False, "startMiB": 1}],
                }
            ]
        },
        ["disks[0].partitions[0]: shouldExist specified false with other options also specified"],
    ),
    (
        {
            "disks": [
                {
                    "device": "/dev/sdb",
                    "partitions": [{"number": 1, "shouldExist": False, "sizeMiB": 1}],
                }
            ]
        },
        ["disks[0].partitions[0]: shouldExist specified false with other options also specified"],
    ),
    (
        {
            "disks": [
                {
                    "device": "/dev/sdb",
                    "partitions": [{"number": 1, "shouldExist": False, "wipePartitionEntry": True}],
                }
            ]
        },
        [],
    ),
    (
        {
            "disks": [
                {
                    "device": "/dev/sdb",
                    "partitions": [{"number": 1, "shouldExist": False, "startMiB": 0}],
                }
            ]
        },
        ["disks[0].partitions[0]: shouldExist specified false with other options also specified"],
    ),
    (
        {
            "disks": [
                {
                    "device": "/dev/sdb",
                    "partitions": [{"number": 1, "shouldExist": False, "label": ""}],
                }
            ]
        },
        ["disks[0].partitions[0]: shouldExist specified false with other options also specified"],
    ),
    (
        {
            "disks": [
                {
                    "device": "/dev/sdb",
                    "partitions": [
                        {"number": 1, "shouldExist": False, "wipePartitionEntry": False}
                    ],
                }
            ]
        },
        [],
    ),
    (
        {
            "disks": [
                {
                    "device": "/dev/sdb",
                    "partitions": [{"label": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}],
                }
            ]
        },
        [],
    ),
    (
        {
            "disks": [
                {
                    "device": "/dev/sdb",
                    "partitions": [{"label": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}],
                }
            ]
        },
        ["disks[0].partitions[0].label: partition labels may not exceed 36 characters"],
    ),
    (
        {"disks": [{"device": "/dev/sdb", "partitions": [{"label": "a:b"}]}]},
        [
            "disks[0].partitions[0].label: partition label will be truncated to text before the colon"
        ],
    ),
    (
        {
            "disks": [
                {
                    "device": "/dev/sdb",
                    "partitions": [{"label": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa:"}],
                }
            ]
        },
        ["disks[0].partitions[0].label: partition labels may not exceed 36 characters"],
    ),
    (
        {"disks": [{"device": "/dev/sdb", "partitions": [{"label": "a"}, {"label": "a"}]}]},
        [
            "disks[0].partitions[1]: cannot use the same partition label twice",
            "disks[0].partitions[1]: duplicate entry defined",
        ],
    ),
    ({"disks": [{"device": "/dev/sdb", "partitions": [{"number": 1}, {"number": 2}]}]}, []),
    (
        {
            "disks": [
                {
                    "device": "/dev/sdb",
                    "partitions": [{"label": "a"}, {"label": "b"}, {"label": "a"}],
                }
            ]
        },
        [
            "disks[0].partitions[2]: cannot use the same partition label twice",
            "disks[0].partitions[2]: duplicate entry defined",
        ],
    ),
    (
        {"disks": [{"device": "/dev/sdb"}, {"device": "/dev/sdb"}]},
        ["disks[1]: duplicate entry defined"],
    ),
    ({"disks": [{"device": ""}]}, ["disks[0].device: disk device is required"]),
    ({"filesystems": [{"device": "/dev/sdb1", "format": "xfs"}]}, []),
    ({"filesystems": [{"device": "/dev/sdb1", "format": "xfs", "path": ""}]}, []),
    (
        {"filesystems": [{"device": "/dev/sdb1", "format": "xfs", "path": "var"}]},
        ["filesystems[0].path: path not absolute"],
    ),
    (
        {"filesystems": [{"device": "/dev/sdb1", "format": "xfs", "path": "/var/"}]},
        ["filesystems[0].path: path is not fully simplified"],
    ),
    (
        {"filesystems": [{"device": "/dev/sdb1", "format": "xfs", "path": "//var"}]},
        ["filesystems[0].path: path is not fully simplified"],
    ),
    (
        {"filesystems": [{"device": "/dev/sdb1", "format": "xfs", "path": "/var//x"}]},
        ["filesystems[0].path: path is not fully simplified"],
    ),
    ({"filesystems": [{"device": "/dev/sdb1"}]}, []),
    (
        {"filesystems": [{"device": "/dev/sdb1", "label": "x"}]},
        [
            "filesystems[0].format: format cannot be empty when path, label, uuid, wipeFilesystem, options, or mountOptions is specified",
            "filesystems[0].label: filesystem must specify format if label is specified",
        ],
    ),
    (
        {"filesystems": [{"device": "/dev/sdb1", "uuid": "u"}]},
        [
            "filesystems[0].format: format cannot be empty when path, label, uuid, wipeFilesystem, options, or mountOptions is specified"
        ],
    ),
    (
        {"filesystems": [{"device": "/dev/sdb1", "wipeFilesystem": True}]},
        [
            "filesystems[0].format: format cannot be empty when path, label, uuid, wipeFilesystem, options, or mountOptions is specified"
        ],
    ),
    (
        {"filesystems": [{"device": "/dev/sdb1", "mountOptions": ["ro"]}]},
        [
            "filesystems[0].format: format cannot be empty when path, label, uuid, wipeFilesystem, options, or mountOptions is specified"
        ],
    ),
    (
        {"filesystems": [{"device": "/dev/sdb1", "options": ["-f"]}]},
        [
            "filesystems[0].format: format cannot be empty when path, label, uuid, wipeFilesystem, options, or mountOptions is specified"
        ],
    ),
    (
        {"filesystems": [{"device": "/dev/sdb1", "path": "/var"}]},
        [
            "filesystems[0].format: format cannot be empty when path, label, uuid, wipeFilesystem, options, or mountOptions is specified"
        ],
    ),
    ({"filesystems": [{"device": "/dev/sdb1", "wipeFilesystem": False}]}, []),
    ({"filesystems": [{"device": "/dev/sdb1", "format": "xfs", "label": "aaaaaaaaaaaa"}]}, []),
    (
        {"filesystems": [{"device": "/dev/sdb1", "format": "xfs", "label": "aaaaaaaaaaaaa"}]},
        [
            "filesystems[0].label: filesystem labels cannot be longer than 12 characters when using xfs"
        ],
    ),
    ({"filesystems": [{"device": "/dev/sdb1", "format": "ext4", "label": "aaaaaaaaaaaaaaaa"}]}, []),
    (
        {"filesystems": [{"device": "/dev/sdb1", "format": "ext4", "label": "aaaaaaaaaaaaaaaaa"}]},
        [
            "filesystems[0].label: filesystem labels cannot be longer than 16 characters when using ext4"
        ],
    ),
    ({"filesystems": [{"device": "/dev/sdb1", "format": "swap", "label": "aaaaaaaaaaaaaaa"}]}, []),
    (
        {"filesystems": [{"device": "/dev/sdb1", "format": "swap", "label": "aaaaaaaaaaaaaaaa"}]},
        [
            "filesystems[0].label: filesystem labels cannot be longer than 15 characters when using swap"
        ],
    ),
    ({"filesystems": [{"device": "/dev/sdb1", "format": "vfat", "label": "aaaaaaaaaaa"}]}, []),
    (
        {"filesystems": [{"device": "/dev/sdb1", "format": "vfat", "label": "aaaaaaaaaaaa"}]},
        [
            "filesystems[0].label: filesystem labels cannot be longer than 11 characters when using vfat"
        ],
    ),
    (
        {
            "filesystems": [
                {
                    "device": "/dev/sdb1",
                    "format": "btrfs",
                    "label": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                }
            ]
        },
        [],
    ),
    (
        {
            "filesystems": [
                {
                    "device": "/dev/sdb1",
                    "format": "btrfs",
                    "label": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                }
            ]
        },
        [
            "filesystems[0].label: filesystem labels cannot be longer than 256 characters when using btrfs"
        ],
    ),
    (
        {
            "filesystems": [
                {
                    "device": "/dev/sdb1",
                    "format": "none",
                    "label": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                }
            ]
        },
        [],
    ),
    ({"filesystems": [{"format": "xfs"}]}, ["filesystems[0].device: path not specified"]),
    (
        {"filesystems": [{"device": "dev", "format": "xfs"}]},
        ["filesystems[0].device: path not absolute"],
    ),
    (
        {
            "filesystems": [
                {"device": "/dev/a", "format": "xfs"},
                {"device": "/dev/a", "format": "xfs"},
            ]
        },
        ["filesystems[1]: duplicate entry defined"],
    ),
    (
        {
            "luks": [
                {
                    "name": "r",
                    "device": "/dev/sdb",
                    "label": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                }
            ]
        },
        [],
    ),
    (
        {
            "luks": [
                {
                    "name": "r",
                    "device": "/dev/sdb",
                    "label": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                }
            ]
        },
        ["luks[0].label: luks device labels cannot be longer than 47 characters"],
    ),
    ({"luks": [{"name": "r", "device": "sdb"}]}, ["luks[0].device: path not absolute"]),
    (
        {"luks": [{"name": "r", "device": "/dev//sdb"}]},
        ["luks[0].device: path is not fully simplified"],
    ),
    (
        {"luks": [{"name": "r", "device": "/dev/sdb"}, {"name": "r", "device": "/dev/sdb"}]},
        ["luks[1]: duplicate entry defined"],
    ),
    (
        {"raid": [{"name": "md0", "level": "linear", "spares": 1, "devices": ["/dev/sdb"]}]},
        ["raid[0].level: spares unsupported for linear and raid0 arrays"],
    ),
    ({"raid": [{"name": "md0", "level": "raid1", "spares": 1, "devices": ["/dev/sdb"]}]}, []),
    ({"raid": [{"name": "md0", "level": "stripe", "devices": ["/dev/sdb"]}]}, []),
    ({"raid": [{"name": "md0", "level": "raid10", "spares": 0, "devices": ["/dev/sdb"]}]}, []),
    (
        {
            "raid": [
                {"name": "md0", "level": "raid1", "devices": ["/dev/sdb"]},
                {"name": "md0", "level": "raid1", "devices": ["/dev/sdb"]},
            ]
        },
        ["raid[1]: duplicate entry defined"],
    ),
    ({"directories": [{"path": ""}]}, ["directories[0].path: path not specified"]),
    ({"directories": [{"path": "d"}]}, ["directories[0].path: path not absolute"]),
    ({"directories": [{"path": "//d"}]}, ["directories[0].path: path is not fully simplified"]),
    ({"directories": [{"path": "/d/"}]}, ["directories[0].path: path is not fully simplified"]),
    ({"directories": [{"path": "/d/./e"}]}, ["directories[0].path: path is not fully simplified"]),
    (
        {"directories": [{"path": "/d"}, {"path": "/d"}]},
        ["directories[1]: duplicate entry defined"],
    ),
    ({"links": [{"path": "/l", "target": ""}]}, ["links[0].target: link target is required"]),
    ({"links": [{"target": "/t"}]}, ["links[0].path: path not specified"]),
    (
        {
            "disks": [
                {
                    "device": "/dev/sdb",
                    "partitions": [{"number": 1, "guid": "0FC63DAF-8483-4772-8E79-3D69D8477DE4"}],
                }
            ]
        },
        [],
    ),
    (
        {"disks": [{"device": "/dev/sdb", "partitions": [{"number": 1, "guid": "zz"}]}]},
        [
            'disks[0].partitions[0].guid: doesn\'t match the form "01234567-89AB-CDEF-EDCB-A98765432101"'
        ],
    ),
    (
        {
            "disks": [
                {
                    "device": "/dev/sdb",
                    "partitions": [
                        {"number": 1, "typeGuid": "0fc63daf-8483-4772-8e79-3d69d8477de4x"}
                    ],
                }
            ]
        },
        [
            'disks[0].partitions[0].typeGuid: doesn\'t match the form "01234567-89AB-CDEF-EDCB-A98765432101"'
        ],
    ),
    ({"disks": [{"device": "/dev/sdb", "partitions": [{"number": 1, "typeGuid": ""}]}]}, []),
    ({"disks": [{"device": "/dev/sdb", "partitions": [{"label": ""}]}]}, []),
    (
        {"disks": [{"device": "/dev/sdb", "partitions": [{"label": "", "shouldExist": False}]}]},
        [
            "disks[0].partitions: shouldExist is false for a partition and other partition(s) has start or size 0",
            "disks[0].partitions[0]: shouldExist specified false with other options also specified",
        ],
    ),
    (
        {"disks": [{"device": "/dev/sdb", "partitions": [{"number": 1}, {"number": 1}]}]},
        [
            "disks[0].partitions[1]: duplicate entry defined",
            "disks[0].partitions[1]: partition numbers collide",
        ],
    ),
    (
        {"disks": [{"device": "/dev/sdb", "partitions": [{"sizeMiB": 1}, {"sizeMiB": 2}]}]},
        [
            "disks[0].partitions[0]: a partition number >= 1 or a label must be specified",
            "disks[0].partitions[1]: a partition number >= 1 or a label must be specified",
            "disks[0].partitions[1]: duplicate entry defined",
        ],
    ),
    (
        {
            "disks": [
                {
                    "device": "/dev/sdb",
                    "partitions": [{"label": "a"}, {"label": "a"}, {"label": "a"}],
                }
            ]
        },
        [
            "disks[0].partitions[1]: cannot use the same partition label twice",
            "disks[0].partitions[1]: duplicate entry defined",
            "disks[0].partitions[2]: duplicate entry defined",
        ],
    ),
    (
        {
            "disks": [
                {
                    "device": "/dev/sdb",
                    "partitions": [{"label": "a", "number": 1}, {"label": "a", "number": 2}],
                }
            ]
        },
        ["disks[0].partitions[1]: cannot use the same partition label twice"],
    ),
    (
        {
            "disks": [
                {
                    "device": "/dev/sdb",
                    "partitions": [{"label": "a", "number": 1}, {"label": "b", "number": 1}],
                }
            ]
        },
        [
            "disks[0].partitions[1]: duplicate entry defined",
            "disks[0].partitions[1]: partition numbers collide",
        ],
    ),
    ({"disks": [{"device": "/dev/sdb", "partitions": [{"number": -1, "shouldExist": False}]}]}, []),
    (
        {
            "disks": [
                {
                    "device": "/dev/sdb",
                    "partitions": [{"number": 1, "shouldExist": False, "sizeMiB": 0}],
                }
            ]
        },
        ["disks[0].partitions[0]: shouldExist specified false with other options also specified"],
    ),
    (
        {
            "disks": [
                {
                    "device": "/dev/sdb",
                    "partitions": [{"number": 1, "shouldExist": False, "typeGuid": ""}],
                }
            ]
        },
        [],
    ),
    ({"disks": [{"device": "sdb"}]}, ["disks[0].device: path not absolute"]),
    ({"disks": [{"device": "/dev//sdb"}]}, ["disks[0].device: path is not fully simplified"]),
    (
        {
            "disks": [
                {
                    "device": "/dev/sdb",
                    "partitions": [
                        {"number": 1, "startMiB": 10, "sizeMiB": 10},
                        {"number": 2, "startMiB": 19, "sizeMiB": 5},
                    ],
                }
            ]
        },
        ["disks[0].partitions[1]: partitions overlap"],
    ),
    (
        {
            "disks": [
                {
                    "device": "/dev/sdb",
                    "partitions": [
                        {"number": 1, "startMiB": 10, "sizeMiB": 10},
                        {"number": 2, "startMiB": 20, "sizeMiB": 5},
                    ],
                }
            ]
        },
        [],
    ),
    (
        {
            "disks": [
                {
                    "device": "/dev/sdb",
                    "partitions": [
                        {"number": 1, "startMiB": 10, "sizeMiB": 10},
                        {"number": 2, "startMiB": 5, "sizeMiB": 5},
                    ],
                }
            ]
        },
        [],
    ),
    (
        {
            "disks": [
                {
                    "device": "/dev/sdb",
                    "partitions": [
                        {"number": 1, "startMiB": 10, "sizeMiB": 10},
                        {"number": 2, "startMiB": 5, "sizeMiB": 6},
                    ],
                }
            ]
        },
        ["disks[0].partitions[1]: partitions overlap"],
    ),
    (
        {
            "disks": [
                {
                    "device": "/dev/sdb",
                    "partitions": [
                        {"number": 1, "startMiB": 10, "sizeMiB": 2},
                        {"number": 2, "startMiB": 5, "sizeMiB": 20},
                    ],
                }
            ]
        },
        ["disks[0].partitions[1]: partitions overlap"],
    ),
    (
        {
            "disks": [
                {
                    "device": "/dev/sdb",
                    "partitions": [
                        {"number": 1, "startMiB": 10, "sizeMiB": 0},
                        {"number": 2, "startMiB": 10, "sizeMiB": 5},
                    ],
                }
            ]
        },
        ["disks[0].partitions[1]: partitions overlap"],
    ),
    (
        {
            "disks": [
                {
                    "device": "/dev/sdb",
                    "partitions": [
                        {"number": 1, "startMiB": 0, "sizeMiB": 10},
                        {"number": 2, "startMiB": 1, "sizeMiB": 5},
                    ],
                }
            ]
        },
        [],
    ),
    (
        {
            "disks": [
                {
                    "device": "/dev/sdb",
                    "partitions": [
                        {"number": 1, "startMiB": 10},
                        {"number": 2, "startMiB": 10, "sizeMiB": 5},
                    ],
                }
            ]
        },
        [],
    ),
    (
        {
            "disks": [
                {
                    "device": "/dev/sdb",
                    "partitions": [{"number": 1, "shouldExist": False}, {"label": "x"}],
                }
            ]
        },
        [
            "disks[0].partitions: shouldExist is false for a partition and other partition(s) has start or size 0"
        ],
    ),
    (
        {
            "disks": [
                {
                    "device": "/dev/sdb",
                    "partitions": [
                        {"number": 1, "shouldExist": False},
                        {"number": 2, "label": "x"},
                    ],
                }
            ]
        },
        [],
    ),
    (
        {"files": [{"path": "/etc/x"}], "links": [{"path": "/etc/x", "target": "/t"}]},
        ["links[0]: duplicate entry defined"],
    ),
]


def _doc(storage: dict[str, Any], version: str = "3.4.0") -> dict[str, Any]:
    return mc_doc(storage=storage, version=version)


@pytest.mark.parametrize(("storage", "problems"), CASES)
def test_each_storage_section_is_judged_as_ignition_judges_it(
    storage: dict[str, Any], problems: list[str]
) -> None:
    found = gate.problems(machine_config_from_object(_doc(storage)))
    assert sorted(found) == sorted(f"spec.config.storage.{p}" for p in problems)


@pytest.mark.skipif(shutil.which("ignition-validate") is None, reason="needs ignition-validate")
def test_the_storage_table_is_ignitions_own_verdict(tmp_path: Path) -> None:
    for i, (storage, problems) in enumerate(CASES):
        path = tmp_path / f"{i}.ign"
        path.write_text(json.dumps(_doc(storage, "3.3.0")["spec"]["config"]))
        done = subprocess.run(
            ["ignition-validate", str(path)], capture_output=True, text=True, check=False,
            timeout=60,
        )  # fmt: skip
        said = sorted(
            line.split(": ", 1)[1] for line in done.stdout.splitlines() if "error at $" in line
        )
        assert said == sorted(p.split(": ", 1)[1] for p in problems), (storage, done.stdout)


@pytest.mark.parametrize(
    ("storage", "problem"),
    [
        ({"disks": [{"device": "/dev/sdb", "partitions": ["x"]}]},
         "disks[0].partitions[0]: expected an object"),
        ({"raid": ["x"]}, "raid[0]: expected an object"),
        ({"filesystems": [{"device": "/dev/sdb1", "format": "xfs", "path": 5}]},
         "filesystems[0].path: path not specified"),
    ],
)  # fmt: skip
def test_an_entry_of_the_wrong_type_is_refused_naming_it(
    storage: dict[str, Any], problem: str
) -> None:
    """Ignition refuses these before validating (a JSON type error); mcd names the entry."""
    found = gate.problems(machine_config_from_object(_doc(storage)))
    assert found == [f"spec.config.storage.{problem}"]
