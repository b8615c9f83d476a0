"""kill -9 in the middle of writing a large file leaves the old or the new bytes, never a mix."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from pathlib import Path

from mcd.host.fs import fsops
from mcd.host.rootfs import Root
from tests.integration.helpers.writer_loop import SIZE

REPO = Path(__file__).resolve().parents[2]


def test_sigkill_mid_write_never_tears_the_file(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    target = root / "etc/big.bin"
    fsops.write_file(Root(root), "/etc/big.bin", b"A" * SIZE)
    rng = random.Random(1234)
    temp_seen = 0
    for _ in range(8):
        proc = subprocess.Popen(
            [sys.executable, "-m", "tests.integration.helpers.writer_loop", str(root), "/etc/big.bin"],
            cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)), stdout=subprocess.PIPE,
        )  # fmt: skip
        assert proc.stdout is not None
        assert proc.stdout.readline() == b"started\n"
        time.sleep(rng.uniform(0.01, 0.3))
        proc.kill()
        proc.wait(10)
        proc.stdout.close()
        data = target.read_bytes()
        assert len(data) == SIZE
        assert data in (b"A" * SIZE, b"B" * SIZE), "torn file: old and new bytes mixed"
        temp_seen += (root / "etc/.big.bin.mcd-tmp").exists()
    assert temp_seen, "no kill landed mid-write; the test proved nothing"
    fsops.write_file(Root(root), "/etc/big.bin", b"final")  # a leftover temp file is no obstacle
    assert target.read_bytes() == b"final"
    assert sorted(p.name for p in (root / "etc").iterdir()) == ["big.bin"]
