"""Crash matrix: ``mcd once-from`` killed with SIGKILL at every step boundary of the update
transaction (and inside the file writes), and inside rollbacks (an update failing at a
random step, killed at a random point of its rollback); the next run converges to the
target, with no file left from the wrong side. The table of points and outcomes is printed."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcd.agent.update.journal import JOURNAL
from mcd.host.ondisk.validation import validate_on_disk
from mcd.host.rootfs import Root
from mcd.host.runner import Runner
from mcd.host.systemd.offline import OfflineSystemd
from mcd.model.machineconfig import machine_config_from_object
from mcd.model.vocabulary import CURRENT_CONFIG_PATH
from tests.builders import file_entry, mc_doc
from tests.fakes import rpm_ostree
from tests.fakes.bus import SystemdBus

REPO = Path(__file__).resolve().parents[2]
BIN = REPO / "tests" / "fakes" / "bin"
IMAGE_A, IMAGE_B = "quay.io/os@sha256:aaaa", "quay.io/os@sha256:bbbb"
UNIT = "[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n"

OLD = mc_doc("rendered-worker-1", osImageURL=IMAGE_A,
             files=[file_entry(f"/etc/app/f{i}", f"old {i}\n" * 1000) for i in range(4)]
             + [file_entry("/etc/app/only-old", "gone soon\n")],
             units=[{"name": "app.service", "contents": UNIT, "enabled": True}],
             users=[{"name": "core", "sshAuthorizedKeys": ["ssh-ed25519 AAAAold"]}])  # fmt: skip
NEW_FILES = mc_doc("rendered-worker-2", osImageURL=IMAGE_A,
                   files=[file_entry(f"/etc/app/f{i}", f"new {i}\n" * 1000) for i in range(4)]
                   + [file_entry("/etc/app/only-new", "fresh\n")],
                   units=[{"name": "app.service", "contents": UNIT + "# v2\n", "enabled": True}],
                   users=[{"name": "core", "sshAuthorizedKeys": ["ssh-ed25519 AAAAnew"]}])  # fmt: skip
NEW_OS = {**NEW_FILES, "metadata": {"name": "rendered-worker-3"},
          "spec": {**NEW_FILES["spec"], "osImageURL": IMAGE_B}}  # fmt: skip

FILE_POINTS = ["begin", "files:1", "files:3", "files", "passwd", "actions", "commit"]
OS_POINTS = ["files:2", "os", "actions", "awaiting-reboot"]


class Harness:
    def __init__(self, tmp: Path, root: Path, bus: SystemdBus) -> None:
        self.tmp, self.root, self.bus = tmp, root, bus
        self.state = tmp / "rpm-ostree.json"
        rpm_ostree.save(self.state, rpm_ostree.new_state(IMAGE_A))
        (root / "run").mkdir(exist_ok=True)
        (root / "run/ostree-booted").write_text("")
        (root / "proc/sys/kernel/random").mkdir(parents=True, exist_ok=True)
        self.new_boot()

    def new_boot(self) -> None:
        (self.root / "proc/sys/kernel/random/boot_id").write_text(str(uuid.uuid4()))

    def config(self, doc: dict[str, object]) -> Path:
        path = self.tmp / f"{doc['metadata']['name']}.json"  # type: ignore[index]
        path.write_text(json.dumps(doc))
        return path

    def run(
        self, source: Path, crash_at: str = "", skip_reboot: bool = False, enospc_at: str = ""
    ) -> int:
        env = dict(os.environ, PATH=f"{BIN}:{os.environ['PATH']}", PYTHONPATH=str(REPO),
                   MCD_FAKE_RPMOSTREE_STATE=str(self.state), MCD_TEST_PYTHON=sys.executable,
                   DBUS_SYSTEM_BUS_ADDRESS=self.bus.address, MCD_CRASH_AT=crash_at,
                   MCD_ENOSPC_AT=enospc_at)  # fmt: skip
        argv = [sys.executable, "-m", "mcd", "once-from", str(source), "--root", str(self.root)]
        proc = subprocess.run(argv + (["--skip-reboot"] if skip_reboot else []),
                              env=env, capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
        assert "Traceback" not in proc.stderr, proc.stderr
        return proc.returncode

    def current(self) -> str:
        return str(
            json.loads((self.root / CURRENT_CONFIG_PATH.lstrip("/")).read_text())["metadata"][
                "name"
            ]
        )

    def matches(self, doc: dict[str, object]) -> bool:
        root = Root(self.root)
        return validate_on_disk(
            machine_config_from_object(doc), root, OfflineSystemd(root, Runner())
        ).ok


@pytest.mark.parametrize("scenario", ["files", "os"])
def test_sigkill_at_every_step_converges(
    scenario: str, tmp_path: Path, node_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    points = FILE_POINTS if scenario == "files" else OS_POINTS
    rows = []
    for point in points:
        root = tmp_path / point.replace(":", "-") / "root"
        shutil.copytree(node_root, root, symlinks=True)
        bus = SystemdBus(root.parent / "bus", root).start()
        try:
            rows.append(run_point(scenario, point, root, bus))
        finally:
            bus.stop()
    with capsys.disabled():
        print(f"\ncrash matrix ({scenario} update): {len(rows)} points")
        for point, what, outcome in rows:
            print(f"  SIGKILL at {point:<16} {what:<7} -> restart {outcome}")


def run_point(scenario: str, point: str, root: Path, bus: SystemdBus) -> tuple[str, str, str]:
    h = Harness(root.parent, root, bus)
    assert h.run(h.config(OLD), skip_reboot=True) == 0
    target = NEW_FILES if scenario == "files" else NEW_OS
    source = h.config(target)
    killed = h.run(source, crash_at=point, skip_reboot=scenario == "files")
    assert killed == -signal.SIGKILL, f"{point}: the crash point was not reached"
    code = h.run(source, skip_reboot=scenario == "files")
    assert code == 0, point
    if scenario == "os":
        assert rpm_ostree.boot_staged(h.state), f"{point}: nothing staged after recovery"
        h.new_boot()
        assert h.run(source) == 0
        booted = next(d for d in rpm_ostree.load(h.state)["deployments"] if d["booted"])
        assert booted["container-image-reference"].endswith(IMAGE_B)
    outcome = h.current()
    assert outcome == target["metadata"]["name"]
    assert h.matches(target), f"{point}: the node does not match {outcome}"
    assert not (root / "etc/app/only-old").exists(), f"{point}: a file of the old config was left"
    assert (
        root / "home/core/.ssh/authorized_keys.d/ignition"
    ).read_text() == "ssh-ed25519 AAAAnew\n"
    assert not (root / JOURNAL.lstrip("/")).exists()
    assert not list(root.rglob("*.mcd-tmp"))
    return point, "killed", f"converged to {outcome}"


ROLLBACK_CASES = [
    ("passwd", "rollback:begin"),
    ("passwd", "rollback:passwd"),
    ("passwd", "rollback:files"),
    ("actions", "rollback:files"),
    ("files:3", "rollback:files"),
    ("commit", "rollback:passwd"),
]
"""(where the update fails with ENOSPC, where its rollback is then SIGKILLed)"""


@settings(max_examples=int(os.environ.get("MCD_ROLLBACK_CRASHES", "4")), deadline=None,
          database=None, suppress_health_check=list(HealthCheck))  # fmt: skip
@given(st.sampled_from(ROLLBACK_CASES))
def test_sigkill_inside_a_rollback_converges(
    tmp_path_factory: pytest.TempPathFactory, node_root: Path, case: tuple[str, str]
) -> None:
    fail_at, crash_at = case
    root = tmp_path_factory.mktemp("rollback") / "root"
    shutil.copytree(node_root, root, symlinks=True)
    bus = SystemdBus(root.parent / "bus", root).start()
    try:
        h = Harness(root.parent, root, bus)
        assert h.run(h.config(OLD), skip_reboot=True) == 0
        source = h.config(NEW_FILES)
        killed = h.run(source, crash_at=crash_at, skip_reboot=True, enospc_at=fail_at)
        assert killed == -signal.SIGKILL, f"{case}: the rollback's crash point was not reached"
        entry = json.loads((root / JOURNAL.lstrip("/")).read_text())
        assert entry["phase"] == "rolling-back"
        assert h.run(source, skip_reboot=True) == 0  # finishes the rollback, then the update
        assert h.current() == "rendered-worker-2"
        assert h.matches(NEW_FILES), f"{case}: the node does not match rendered-worker-2"
        assert not (root / "etc/app/only-old").exists()
        assert not (root / JOURNAL.lstrip("/")).exists()
        assert not list(root.rglob("*.mcd-tmp"))
    finally:
        bus.stop()
