"""A private system-like D-Bus (real ``dbus-daemon``) with the fake systemd manager on it.

Started and stopped by the tests, each process stopped by its own pid.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path={socket}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_type="method_call"/>
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
  </policy>
</busconfig>
"""

REPO = Path(__file__).resolve().parents[2]


class SystemdBus:
    """``dbus-daemon`` on ``<dir>/system_bus_socket`` plus the fake ``systemd1`` manager."""

    def __init__(self, workdir: Path, root: Path) -> None:
        self.workdir = workdir
        self.root = root
        self.state = workdir / "systemd1"
        self.state.mkdir(parents=True, exist_ok=True)
        self.socket = workdir / "system_bus_socket"
        self._short_dir: str | None = None
        if len(str(self.socket)) > 80:  # sun_path holds 108 bytes: deep pytest dirs overflow
            self._short_dir = tempfile.mkdtemp(prefix="mcd-bus-")
            self.socket = Path(self._short_dir) / "system_bus_socket"
        self.address = f"unix:path={self.socket}"
        self._bus_pid: int | None = None
        self._fake: subprocess.Popen[bytes] | None = None

    def start(self) -> SystemdBus:
        config = self.workdir / "bus.conf"
        config.write_text(BUS_CONFIG.format(socket=self.socket))
        out = subprocess.run(
            [
                "dbus-daemon",
                f"--config-file={config}",
                "--fork",
                "--nopidfile",
                "--print-address=1",
                "--print-pid=1",
            ],
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        ).stdout.split()
        self._bus_pid = int(out[-1])
        env = dict(os.environ, PYTHONPATH=str(REPO))
        self._fake = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.fakes.systemd1",
                "--address",
                self.address,
                "--root",
                str(self.root),
                "--state",
                str(self.state),
            ],
            env=env,
            cwd=REPO,
        )
        deadline = time.monotonic() + 15
        while not (self.state / "ready").exists():
            if self._fake.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("fake systemd1 did not come up")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        if self._fake is not None:
            self._fake.terminate()
            try:
                self._fake.wait(5)
            except subprocess.TimeoutExpired:
                self._fake.kill()
                self._fake.wait(5)
            self._fake = None
        if self._bus_pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._bus_pid, signal.SIGTERM)
            self._bus_pid = None
        if self._short_dir is not None:
            shutil.rmtree(self._short_dir, ignore_errors=True)

    def calls(self, *members: str) -> list[dict[str, Any]]:
        """Calls the manager received, optionally only those named ``members``."""
        path = self.state / "calls.jsonl"
        if not path.exists():
            return []
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        return [r for r in rows if not members or r["member"] in members]

    def fail_job(self, unit: str, result: str = "failed") -> None:
        self._update_faults("jobs", unit, result)

    def fail_method(self, member: str, error: str = "org.freedesktop.DBus.Error.Failed") -> None:
        self._update_faults("methods", member, error)

    def set_active_state(self, unit: str, state: str) -> None:
        """What ``ListUnitsByNames`` answers for ``unit`` (every unit is ``active`` otherwise)."""
        self._update_faults("active", unit, state)

    def clear_faults(self) -> None:
        (self.state / "faults.json").write_text("{}")

    def _update_faults(self, kind: str, key: str, value: str) -> None:
        path = self.state / "faults.json"
        faults = json.loads(path.read_text()) if path.exists() else {}
        faults.setdefault(kind, {})[key] = value
        path.write_text(json.dumps(faults))
