"""Host effects against a real systemd: PID 1 of an nspawn container, reached over its system bus.

What is asserted is what systemd itself reports (unit file state, load state, the properties a
dropin sets, job results) and what the units it ran left on disk, never what a client sent.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcd.cli import cli
from mcd.host.effects import HostEffects
from mcd.host.ondisk.validation import validate_on_disk
from mcd.host.rootfs import Root
from mcd.host.runner import Runner
from mcd.host.systemd.connect import connect
from mcd.host.systemd.dbus import DBusCallError, DBusSystemd
from mcd.host.systemd.manager import JobFailed, SystemdError
from tests.builders import mc, mc_doc
from tests.real.systemd_container import SystemdContainer

WANTS = "etc/systemd/system/multi-user.target.wants"
# the module's tests share one booted container: one worker runs them all
pytestmark = pytest.mark.xdist_group("real-systemd")


def service(
    exec_start: str = "/bin/sleep infinity", extra: str = "", wanted_by: str = "multi-user.target"
) -> str:
    return (
        f"[Unit]\nDescription=mcd test\n[Service]\nExecStart={exec_start}\n{extra}"
        f"[Install]\nWantedBy={wanted_by}\n"
    )


@pytest.fixture
def client(shared_systemd: SystemdContainer) -> Iterator[DBusSystemd]:
    c = DBusSystemd(shared_systemd.address)
    try:
        yield c
    finally:
        c.close()


@pytest.fixture
def tag() -> str:
    """A prefix of the test's own: the module shares one container."""
    return f"t{uuid.uuid4().hex[:6]}"


def fx(container: SystemdContainer, client: DBusSystemd) -> HostEffects:
    return HostEffects(Root(str(container.root)), client)


def test_units_written_enabled_disabled_preset_and_dropins_as_systemd_sees_them(
    shared_systemd: SystemdContainer, client: DBusSystemd, tag: str
) -> None:
    root = shared_systemd.root
    preset = root / "etc/systemd/system-preset/50-mcd-test.preset"
    preset.parent.mkdir(parents=True, exist_ok=True)
    preset.write_text(f"enable {tag}-plain.service\ndisable {tag}-quiet.service\n")
    cfg = mc(units=[
        {"name": f"{tag}-on.service", "contents": service(), "enabled": True},
        {"name": f"{tag}-off.service", "contents": service(), "enabled": False},
        {"name": f"{tag}-plain.service", "contents": service()},
        {"name": f"{tag}-quiet.service", "contents": service()},
        {"name": f"{tag}-side.service", "contents": service(),
         "dropins": [{"name": "10-env.conf", "contents": "[Service]\nEnvironment=MCD_A=1\n"}]},
    ])  # fmt: skip
    fx(shared_systemd, client).write_units(cfg.ignition.units)
    client.daemon_reload()
    assert client.unit_file_state(f"{tag}-on.service") == "enabled"
    assert (root / WANTS / f"{tag}-on.service").is_symlink()
    assert client.unit_file_state(f"{tag}-off.service") == "disabled"
    assert client.unit_file_state(f"{tag}-plain.service") == "enabled"  # by the preset file
    assert client.unit_file_state(f"{tag}-quiet.service") == "disabled"
    assert shared_systemd.unit_property(f"{tag}-on.service", "UnitFileState") == "enabled"
    assert shared_systemd.unit_property(f"{tag}-side.service", "LoadState") == "loaded"
    drop_ins = shared_systemd.unit_property(f"{tag}-side.service", "DropInPaths")
    assert f"/etc/systemd/system/{tag}-side.service.d/10-env.conf" in drop_ins
    env = shared_systemd.unit_property(f"{tag}-side.service", "Environment", "Service")
    assert '"MCD_A=1"' in env or "MCD_A=1" in env


def test_rewriting_an_enabled_unit_moves_its_wants_link(
    shared_systemd: SystemdContainer, client: DBusSystemd, tag: str
) -> None:
    name = f"{tag}-app.service"
    effects = fx(shared_systemd, client)
    effects.write_units(
        mc(units=[{"name": name, "contents": service(), "enabled": True}]).ignition.units
    )
    assert (shared_systemd.root / WANTS / name).is_symlink()
    v2 = service(wanted_by="graphical.target")
    effects.write_units(mc(units=[{"name": name, "contents": v2, "enabled": True}]).ignition.units)
    assert not (shared_systemd.root / WANTS / name).exists()
    assert (shared_systemd.root / "etc/systemd/system/graphical.target.wants" / name).is_symlink()
    assert client.unit_file_state(name) == "enabled"


def test_mask_and_unmask(shared_systemd: SystemdContainer, client: DBusSystemd, tag: str) -> None:
    name = f"{tag}-noisy.service"
    effects = fx(shared_systemd, client)
    effects.write_units(mc(units=[{"name": name, "contents": service()}]).ignition.units)
    effects.write_units(mc(units=[{"name": name, "mask": True}]).ignition.units)
    client.daemon_reload()
    assert client.unit_file_state(name) == "masked"
    assert shared_systemd.unit_property(name, "LoadState") == "masked"
    with pytest.raises(DBusCallError, match="UnitMasked"):  # systemd refuses to start it
        client.restart(name)
    effects.write_units(mc(units=[{"name": name, "mask": False}]).ignition.units)
    client.daemon_reload()
    assert client.unit_file_state(name) == "not-found"  # unmasked, and upstream removes the file
    assert shared_systemd.unit_property(name, "LoadState") == "not-found"


def test_units_leaving_the_config_are_preset_and_removed(
    shared_systemd: SystemdContainer, client: DBusSystemd, tag: str
) -> None:
    name = f"{tag}-gone.service"
    effects = fx(shared_systemd, client)
    old = mc(units=[{"name": name, "contents": service(), "enabled": True,
                     "dropins": [{"name": "10-x.conf", "contents": "[Service]\n"}]}])  # fmt: skip
    effects.write_units(old.ignition.units)
    effects.delete_stale_data(old.ignition, mc(units=[]).ignition)
    client.daemon_reload()
    assert not (shared_systemd.root / "etc/systemd/system" / name).exists()
    assert not (shared_systemd.root / f"etc/systemd/system/{name}.d/10-x.conf").exists()
    assert not (shared_systemd.root / WANTS / name).exists()
    assert client.unit_file_state(name) == "not-found"


def test_restart_and_reload_jobs_run_and_report_their_results(
    shared_systemd: SystemdContainer, client: DBusSystemd, tag: str
) -> None:
    name = f"{tag}-svc.service"
    log = f"/var/tmp/{tag}.log"
    unit = service(
        f"/bin/sh -c 'echo start >>{log}; exec sleep infinity'",
        f"ExecReload=/bin/sh -c 'echo reload >>{log}'\n",
    )
    fx(shared_systemd, client).write_units(
        mc(units=[{"name": name, "contents": unit, "enabled": True}]).ignition.units
    )
    client.daemon_reload()
    client.restart(name)
    assert shared_systemd.unit_property(name, "ActiveState") == "active"
    first_pid = shared_systemd.unit_property(name, "MainPID", "Service")
    client.reload(name)
    client.restart(name)
    assert shared_systemd.unit_property(name, "MainPID", "Service") != first_pid
    assert (shared_systemd.root / log.lstrip("/")).read_text().split() == [
        "start",
        "reload",
        "start",
    ]


def test_a_restart_or_reload_that_fails_is_a_job_failure(
    shared_systemd: SystemdContainer, client: DBusSystemd, tag: str
) -> None:
    broken = f"{tag}-broken.service"
    bad_reload = f"{tag}-badreload.service"
    fx(shared_systemd, client).write_units(mc(units=[
        {"name": broken, "contents": service("/bin/false", "Type=oneshot\n")},
        {"name": bad_reload, "contents": service(extra="ExecReload=/bin/false\n")},
    ]).ignition.units)  # fmt: skip
    client.daemon_reload()
    with pytest.raises(JobFailed, match=rf"restarting {broken} failed: job result 'failed'"):
        client.restart(broken)
    assert shared_systemd.unit_property(broken, "ActiveState") == "failed"
    client.restart(bad_reload)
    with pytest.raises(JobFailed, match=rf"reloading {bad_reload} failed: job result 'failed'"):
        client.reload(bad_reload)
    with pytest.raises(DBusCallError, match=r"org\.freedesktop\.systemd1\.NoSuchUnit"):
        client.restart(f"{tag}-nothing-here.service")


def test_unit_files_lists_what_systemd_knows(
    shared_systemd: SystemdContainer, client: DBusSystemd, tag: str
) -> None:
    name = f"{tag}-listed.service"
    assert name not in client.unit_files()
    fx(shared_systemd, client).write_units(
        mc(units=[{"name": name, "contents": service(), "enabled": False}]).ignition.units
    )
    assert name in client.unit_files()
    assert "systemd-journald.service" in client.unit_files()


def test_validation_checks_enablement_over_dbus(
    shared_systemd: SystemdContainer, client: DBusSystemd, tag: str, tmp_path: Path
) -> None:
    on, off = f"{tag}-on.service", f"{tag}-off.service"
    doc = mc_doc("rendered-worker-1", units=[
        {"name": on, "contents": service(), "enabled": True},
        {"name": off, "contents": service(), "enabled": False},
    ])  # fmt: skip
    cfg = mc("rendered-worker-1", units=doc["spec"]["config"]["systemd"]["units"])
    root = Root(str(shared_systemd.root))
    fx(shared_systemd, client).write_units(cfg.ignition.units)
    assert validate_on_disk(cfg, root, client).ok
    client.disable([on])
    client.enable([off])
    assert validate_on_disk(cfg, root, client).reasons() == [
        f'unexpected on-disk state validating against rendered-worker-1: unit "{on}" expected enabled=true, but systemd reports "disabled"',
        f'unexpected on-disk state validating against rendered-worker-1: unit "{off}" expected enabled=false, but systemd reports "enabled"',
    ]
    # the command finds the node's bus where the DaemonSet does: <root>/run/dbus/system_bus_socket
    config = tmp_path / "mc.json"
    config.write_text(json.dumps(doc))
    args = ["validate", str(config), "--root", str(shared_systemd.root)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2  # not matching (README "Exit codes")
    assert f'unit "{on}" expected enabled=true, but systemd reports "disabled"' in result.output
    client.enable([on])
    client.disable([off])
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output


def test_connect_reaches_the_containers_manager_through_the_root(
    shared_systemd: SystemdContainer,
) -> None:
    systemd = connect(Root(str(shared_systemd.root)), Runner(), environ={})
    try:
        assert systemd.live
        assert systemd.unit_file_state("systemd-journald.service") == "static"
    finally:
        systemd.close()


def test_the_reboot_unit_reboots_the_node(real_systemd: SystemdContainer) -> None:
    client = DBusSystemd(real_systemd.address)
    try:
        client.reboot("Node will reboot into config rendered-worker-2")
    finally:
        client.close()
    assert real_systemd.wait_exit(60) == 133  # systemd-nspawn's "the container rebooted"
    real_systemd.boot()  # the next boot: the same root, a new PID 1
    assert real_systemd.system_state() in ("running", "degraded")
    assert real_systemd.boots == 2 and real_systemd.exits == [133]


def test_the_reboot_unit_is_a_transient_unit_after_ostree_finalize(
    real_systemd: SystemdContainer,
) -> None:
    """With ostree-finalize-staged.service present, the reboot waits for it; the transient unit
    is what systemd ran."""
    vendor = real_systemd.root / "etc/systemd/system/ostree-finalize-staged.service"
    vendor.write_text(
        "[Unit]\nDescription=stand-in\n[Service]\nType=oneshot\nRemainAfterExit=yes\n"
        "ExecStart=/bin/true\nExecStop=/bin/sh -c 'echo finalized >/var/tmp/finalized'\n"
    )
    client = DBusSystemd(real_systemd.address)
    try:
        client.daemon_reload()
        client.reboot("r")
    finally:
        client.close()
    assert real_systemd.wait_exit(60) == 133
    assert (real_systemd.root / "var/tmp/finalized").read_text() == "finalized\n"


def test_a_job_on_a_dead_bus_is_an_error_not_a_hang(real_systemd: SystemdContainer) -> None:
    client = DBusSystemd(real_systemd.address, timeout=5.0)
    try:
        real_systemd.stop()
        with pytest.raises((SystemdError, OSError, TimeoutError, EOFError)):
            client.daemon_reload()
    finally:
        client.close()
