"""Test stand-ins for the host tools of the boot loader update before an OS pivot (upstream
``pkg/daemon/bootupd.go``): ``mokutil``, ``systemctl``, ``systemd-run``, ``podman``, ``lsblk``,
``findmnt``, ``mount``, ``umount`` and ``sync``, run as ``python -m tests.fakes.bootupd_tools
TOOL ARGS...`` from the wrappers :func:`install` writes. Each records its argv (one JSON list
a line in ``calls.jsonl``) and answers as the node would, from ``config.json``, both in
``$MCD_FAKE_BOOTUPD_DIR``. Nothing touches the machine: ``mount`` mounts nothing, ``podman cp``
copies from a directory standing for the image, ``systemd-run`` runs the stand-in podman."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

TOOLS = ("mokutil", "systemctl", "systemd-run", "podman", "lsblk", "findmnt", "mount",
         "umount", "sync")  # fmt: skip
CONTAINER_ID = "0f" * 32
ESP = "c12a7328-f81f-11d2-ba4b-00a0c93ec93b"


def install(bin_dir: Path, state: Path, config: dict[str, Any]) -> None:
    """Wrappers for every tool in ``bin_dir`` and the answers in ``state``/config.json."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    state.mkdir(parents=True, exist_ok=True)
    (state / "config.json").write_text(json.dumps(config))
    repo = Path(__file__).resolve().parents[2]
    for tool in TOOLS:
        wrapper = bin_dir / tool
        wrapper.write_text(
            "#!/bin/sh\n"
            f'PYTHONPATH="{repo}${{PYTHONPATH:+:$PYTHONPATH}}" exec '
            f'"${{MCD_TEST_PYTHON:-python3}}" -m tests.fakes.bootupd_tools {tool} "$@"\n'
        )
        wrapper.chmod(0o755)


def calls(state: Path) -> list[list[str]]:
    path = state / "calls.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line]


def single_disk(esp: str = "/dev/vda2", boot: str = "/dev/vda3") -> dict[str, Any]:
    """``lsblk --paths --json -o NAME,PARTTYPE,FSTYPE`` of one disk with an ESP."""
    return {"blockdevices": [{"name": "/dev/vda", "parttype": None, "fstype": None, "children": [
        {"name": "/dev/vda1", "parttype": "21686148-6449-6e6f-744e-656564454649",
         "fstype": None},
        {"name": esp, "parttype": ESP, "fstype": "vfat"},
        {"name": boot, "parttype": "0fc63daf-8483-4772-8e79-3d69d8477de4", "fstype": "ext4"},
    ]}]}  # fmt: skip


def main(argv: list[str]) -> int:
    state = Path(os.environ["MCD_FAKE_BOOTUPD_DIR"])
    config = json.loads((state / "config.json").read_text())
    tool, args = argv[0], argv[1:]
    with (state / "calls.jsonl").open("a") as log:
        log.write(json.dumps([tool, *args]) + "\n")
    if tool == "mokutil":
        print(config.get("secure_boot", "SecureBoot enabled"))
        return 0
    if tool == "systemctl":
        if args[:2] == ["start", "bootloader-update.service"] and config.get("service_fails"):
            print("Job for bootloader-update.service failed.", file=sys.stderr)
            return 1
        return 0
    if tool == "systemd-run":
        rest = args[args.index("--") + 1 :]
        return subprocess.run(rest, check=False).returncode
    if tool == "podman":
        return _podman(args, config)
    if tool == "lsblk":
        print(json.dumps(config["lsblk"]))
        return 0
    if tool == "findmnt":
        print(config["boot_source"])
        return 0
    if tool == "mount" and config.get("mount_fails"):
        print(f"mount: {args[-1]}: special device {args[0]} does not exist.", file=sys.stderr)
        return 32
    return 0  # mount, umount, sync: nothing to do here


def _podman(args: list[str], config: dict[str, Any]) -> int:
    if args[:2] == ["image", "exists"]:
        return 0 if config.get("image_present") else 1
    if args[-2:] == ["bootupctl", "update"] and config.get("bootupctl_fails"):
        print("error: renameat2: Invalid argument", file=sys.stderr)
        return 1
    if args[:1] == ["create"]:
        print(CONTAINER_ID)
        return 0
    if args[:1] == ["cp"]:
        container, _, path = args[1].partition(":")
        if container != CONTAINER_ID:
            print(f"Error: no container with name or ID {container!r} found", file=sys.stderr)
            return 125
        source = Path(config["image_tree"] + path)
        shutil.copytree(source, Path(args[2]) / source.name, dirs_exist_ok=True)
        return 0
    return 0  # pull, run (bootupctl update succeeding), rm


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
