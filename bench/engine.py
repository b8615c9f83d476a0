"""Parse, diff and plan two rendered configs of 2,000 files; validate 5,000 files on disk.

Baselines, measured in the same run:
- parse+diff+plan: decoding the same two JSON documents with ``json.loads`` alone;
- validation: a minimal loop doing ``lstat``, a mode compare, ``read`` and a byte compare
  of the same 5,000 files against already-decoded expected bytes.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

from bench.common import Row, paired, with_load_check
from mcd.host.ondisk.validation import validate_on_disk
from mcd.host.rootfs import Root
from mcd.model.ignition.dataurl import encode_data_url
from mcd.model.machineconfig import load_machine_config
from mcd.model.planning.plan import make_plan

PLAN_LOAD_RATIO = 80.0
"""``make test``'s limit for parse+diff+plan over ``json.loads`` of the same documents."""


def rendered(name: str, n_files: int, variant: int) -> dict[str, Any]:
    files = []
    for i in range(n_files):
        data = f"# file {i} of {name}\nkey{i} = value{i if i % 50 else i + variant}\n" * 4
        files.append(
            {"path": f"/etc/bench/d{i % 40}/file{i}.conf", "mode": 0o644, "overwrite": True,
             "contents": {"source": encode_data_url(data.encode())}}
        )  # fmt: skip
    units = [
        {"name": f"bench{i}.service", "enabled": True,
         "contents": f"[Service]\nExecStart=/bin/echo {i + (variant if i % 10 == 0 else 0)}\n"}
        for i in range(50)
    ]  # fmt: skip
    return {
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": {"name": name},
        "spec": {
            "osImageURL": "quay.io/example/os@sha256:abc",
            "config": {
                "ignition": {"version": "3.4.0"},
                "storage": {"files": files},
                "systemd": {"units": units},
                "passwd": {
                    "users": [{"name": "core", "sshAuthorizedKeys": [f"ssh-ed25519 K{variant}"]}]
                },
            },
        },
    }


def bench_plan(n_files: int = 2000) -> Row:
    old_text = json.dumps(rendered("rendered-worker-1", n_files, 0))
    new_text = json.dumps(rendered("rendered-worker-2", n_files, 1))

    def engine() -> None:
        plan = make_plan(load_machine_config(old_text), load_machine_config(new_text))
        assert plan.reconcilable and plan.files.changed

    def baseline() -> None:
        json.loads(old_text)
        json.loads(new_text)

    figure, base = paired(engine, baseline, repeat=5)
    row = Row(f"parse+diff+plan, {n_files}-file pair", figure, base, "< 1000 ms", figure < 1.0)
    return with_load_check(row, PLAN_LOAD_RATIO)


def bench_validate(n_files: int = 5000) -> Row:
    cfg = load_machine_config(json.dumps(rendered("rendered-worker-1", n_files, 0)))
    with tempfile.TemporaryDirectory(prefix="mcd-bench-") as tmp:
        root = Path(tmp)
        expected: list[tuple[str, bytes, int]] = []
        for f in cfg.ignition.files:
            target = root / f.path.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            data = f.data()
            target.write_bytes(data)
            os.chmod(target, f.effective_mode)
            expected.append((str(target), data, f.effective_mode))
        for u in cfg.ignition.units:
            target = root / "etc/systemd/system" / u.name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(u.contents or "")
            os.chmod(target, 0o644)
            expected.append((str(target), (u.contents or "").encode(), 0o644))

        def engine() -> None:
            assert validate_on_disk(cfg, Root(root)).ok

        def baseline() -> None:
            for path, data, mode in expected:
                st = os.lstat(path)
                if stat.S_IMODE(st.st_mode) != mode or not stat.S_ISREG(st.st_mode):
                    raise AssertionError(path)
                with open(path, "rb") as fh:
                    if fh.read() != data:
                        raise AssertionError(path)

        engine()  # warm the page cache for both
        baseline()
        figure, base = paired(engine, baseline, repeat=7)
    row = Row(
        f"validate {n_files} files on disk",
        figure,
        base,
        "<= 1.3x baseline",
        figure <= 1.3 * base,
    )
    return with_load_check(row, 2.0)
