"""A test stand-in for systemd's ``org.freedesktop.systemd1.Manager`` on a private bus.

Run as ``python -m tests.fakes.systemd1 --address ADDR --root ROOT --state DIR``.

* Unit-file methods (enable, disable, preset, mask, unmask, state, list) are
  carried out by the real ``systemctl --root=ROOT`` on the temp root, so the
  unit-file semantics (symlinks in ``*.wants``, presets, masks) are systemd's.
* Jobs (reload, restart, start, transient units such as the reboot) return a
  job path at once and emit ``JobRemoved`` shortly after, as systemd does; the
  result is ``done`` unless ``DIR/faults.json`` says otherwise.
* Every call is appended to ``DIR/calls.jsonl`` for the tests to read.

``faults.json``: ``{"jobs": {"crio.service": "failed"}, "active": {"crio.service": "failed"}, "methods": {"Reload": "org.freedesktop.DBus.Error.Failed"}}``.
"""

import argparse
import asyncio
import json
import os
import re
import subprocess
from pathlib import Path
from typing import Annotated, Any

from dbus_fast import BusType, DBusError, Variant
from dbus_fast.aio import MessageBus
from dbus_fast.annotations import DBusBool, DBusObjectPath, DBusSignature, DBusStr, DBusUInt32
from dbus_fast.service import ServiceInterface, method, signal

Strings = Annotated[list[str], DBusSignature("as")]
Changes = Annotated[list[list[str]], DBusSignature("a(sss)")]
InstallResult = Annotated[list[Any], DBusSignature("ba(sss)")]
UnitFileList = Annotated[list[list[str]], DBusSignature("a(ss)")]
Properties = Annotated[list[list[Any]], DBusSignature("a(sv)")]
AuxUnits = Annotated[list[list[Any]], DBusSignature("a(sa(sv))")]
UnitList = Annotated[list[list[Any]], DBusSignature("a(ssssssouso)")]
JobRemovedSignal = Annotated[list[Any], DBusSignature("uoss")]

UNIT_DIRS = ("etc/systemd/system", "usr/lib/systemd/system", "lib/systemd/system")
_CREATED = re.compile(r"Created symlink (\S+) \u2192 (\S+?)\.?$")
_REMOVED = re.compile(r'Removed "?([^"]+?)"?\.?$')


class Manager(ServiceInterface):
    def __init__(self, root: Path, state: Path) -> None:
        super().__init__("org.freedesktop.systemd1.Manager")
        self.root = root
        self.state = state
        self.next_job = 0

    # -- bookkeeping -----------------------------------------------------------------

    def _record(self, member: str, *args: Any) -> None:
        def plain(value: Any) -> Any:
            if isinstance(value, Variant):
                return {"signature": value.signature, "value": plain(value.value)}
            if isinstance(value, list | tuple):
                return [plain(v) for v in value]
            return value

        fault = self._faults().get("methods", {}).get(member)
        row: dict[str, Any] = {"member": member, "args": plain(list(args))}
        if fault:
            row["failed"] = fault  # refused: the call had no effect
        with open(self.state / "calls.jsonl", "a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")
        if fault:
            raise DBusError(fault, f"injected failure of {member}")

    def _faults(self) -> dict[str, Any]:
        try:
            data: dict[str, Any] = json.loads((self.state / "faults.json").read_text())
        except FileNotFoundError:
            return {}
        return data

    def _systemctl(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["systemctl", f"--root={self.root}", *args],
            capture_output=True,
            text=True,
            check=False,
        )

    def _changes(self, *args: str) -> list[list[str]]:
        proc = self._systemctl(*args)
        if proc.returncode != 0:
            raise DBusError("org.freedesktop.DBus.Error.Failed", proc.stderr.strip())
        changes = []
        for line in proc.stderr.splitlines() + proc.stdout.splitlines():
            if m := _CREATED.search(line.strip()):
                changes.append(["symlink", m.group(1), m.group(2)])
            elif m := _REMOVED.search(line.strip()):
                changes.append(["unlink", m.group(1), ""])
        return changes

    def _state_of(self, name: str) -> str:
        proc = self._systemctl("is-enabled", name)
        out = proc.stdout.strip()
        return out.splitlines()[-1] if out else "not-found"

    def _job(self, unit: str) -> str:
        if self._state_of(unit) == "not-found" and not unit.startswith("machine-config-daemon-"):
            raise DBusError("org.freedesktop.systemd1.NoSuchUnit", f"Unit {unit} not found.")
        self.next_job += 1
        job_id = self.next_job
        path = f"/org/freedesktop/systemd1/job/{job_id}"
        result = self._faults().get("jobs", {}).get(unit, "done")
        asyncio.get_running_loop().call_later(0.02, self.JobRemoved, job_id, path, unit, result)
        return path

    # -- methods --------------------------------------------------------------------

    @method()
    def Subscribe(self) -> None:
        self._record("Subscribe")

    @method()
    def Reload(self) -> None:  # systemctl daemon-reload
        self._record("Reload")

    @method()
    def GetUnitFileState(self, name: DBusStr) -> DBusStr:
        self._record("GetUnitFileState", name)
        state = self._state_of(name)
        if state == "not-found":
            raise DBusError(
                "org.freedesktop.DBus.Error.FileNotFound", f"No such file or directory: {name}"
            )
        return state

    @method()
    def ListUnitFiles(self) -> UnitFileList:
        self._record("ListUnitFiles")
        proc = self._systemctl("list-unit-files", "--no-legend", "--no-pager", "--full")
        files = []
        for line in proc.stdout.splitlines():
            parts = line.split()
            if len(parts) >= 2:
                files.append([self._path_of(parts[0]), parts[1]])
        return files

    def _path_of(self, name: str) -> str:
        for directory in UNIT_DIRS:
            if os.path.lexists(self.root / directory / name):
                return f"/{directory}/{name}"
        return f"/etc/systemd/system/{name}"

    @method()
    def EnableUnitFiles(self, files: Strings, runtime: DBusBool, force: DBusBool) -> InstallResult:
        self._record("EnableUnitFiles", files, runtime, force)
        return [True, self._changes("enable", *files)]

    @method()
    def DisableUnitFiles(self, files: Strings, runtime: DBusBool) -> Changes:
        self._record("DisableUnitFiles", files, runtime)
        return self._changes("disable", *files)

    @method()
    def PresetUnitFiles(self, files: Strings, runtime: DBusBool, force: DBusBool) -> InstallResult:
        self._record("PresetUnitFiles", files, runtime, force)
        return [True, self._changes("preset", *files)]

    @method()
    def MaskUnitFiles(self, files: Strings, runtime: DBusBool, force: DBusBool) -> Changes:
        self._record("MaskUnitFiles", files, runtime, force)
        return self._changes("mask", *(["--force"] if force else []), *files)

    @method()
    def UnmaskUnitFiles(self, files: Strings, runtime: DBusBool) -> Changes:
        self._record("UnmaskUnitFiles", files, runtime)
        return self._changes("unmask", *files)

    @method()
    def ReloadUnit(self, name: DBusStr, mode: DBusStr) -> DBusObjectPath:
        self._record("ReloadUnit", name, mode)
        return self._job(name)

    @method()
    def RestartUnit(self, name: DBusStr, mode: DBusStr) -> DBusObjectPath:
        self._record("RestartUnit", name, mode)
        return self._job(name)

    @method()
    def StopUnit(self, name: DBusStr, mode: DBusStr) -> DBusObjectPath:
        self._record("StopUnit", name, mode)
        return self._job(name)

    @method()
    def StartUnit(self, name: DBusStr, mode: DBusStr) -> DBusObjectPath:
        self._record("StartUnit", name, mode)
        return self._job(name)

    @method()
    def ListUnitsByNames(self, names: Strings) -> UnitList:
        self._record("ListUnitsByNames", names)
        states = self._faults().get("active", {})
        rows = []
        for name in names:
            state = states.get(name, "active")
            sub = {"active": "running", "failed": "failed"}.get(state, "dead")
            path = f"/org/freedesktop/systemd1/unit/{re.sub(r'[^A-Za-z0-9]', '_', name)}"
            rows.append([name, "", "loaded", state, sub, "", path, 0, "", "/"])
        return rows

    @method()
    def StartTransientUnit(
        self, name: DBusStr, mode: DBusStr, properties: Properties, aux: AuxUnits
    ) -> DBusObjectPath:
        self._record("StartTransientUnit", name, mode, properties, aux)
        return self._job(name)

    @signal()
    def JobRemoved(
        self, job_id: DBusUInt32, job: DBusObjectPath, unit: DBusStr, result: DBusStr
    ) -> JobRemovedSignal:
        return [job_id, job, unit, result]


async def serve(address: str, root: Path, state: Path) -> None:
    bus = await MessageBus(bus_address=address, bus_type=BusType.SYSTEM).connect()
    bus.export("/org/freedesktop/systemd1", Manager(root, state))
    await bus.request_name("org.freedesktop.systemd1")
    (state / "ready").write_text(str(os.getpid()))
    await bus.wait_for_disconnect()  # type: ignore[no-untyped-call]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--address", required=True)
    parser.add_argument("--root", required=True, type=Path)
    parser.add_argument("--state", required=True, type=Path)
    args = parser.parse_args()
    asyncio.run(serve(args.address, args.root, args.state))


if __name__ == "__main__":
    main()
