"""The login monitor against a real systemd-journald (in a private mount namespace, on a
tmpfs ``/run``): logind's session starts are seen, early ones included; look-alikes are not."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HELPER = Path(__file__).parent / "helpers" / "logind_journal.py"
JOURNALD = "/lib/systemd/systemd-journald"
REPO = Path(__file__).resolve().parents[2]

needs_journald = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("unshare") or not os.path.exists(JOURNALD),
    reason="needs root, unshare and systemd-journald (a private mount namespace)",
)


def in_namespace(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["unshare", "-m", "--propagation", "private", sys.executable, str(HELPER), *args],
        capture_output=True, text=True, timeout=60, check=False, cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip


@needs_journald
def test_session_starts_are_seen_early_and_live_and_lookalikes_are_not(tmp_path: Path) -> None:
    done = in_namespace("follow", str(tmp_path))
    assert done.returncode == 0, done.stderr
    # session 1 started before the monitor, 3 after it; 2 came from a process that is not logind
    assert json.loads(done.stdout) == ["1", "3"]


def write_logins(directory: Path, *specs: str) -> None:
    """Journal files holding the given session starts (see the helper), in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    done = in_namespace("write", str(directory), *specs)
    assert done.returncode == 0, done.stderr
