"""Units, dropins, masks and enablement through systemd over a real D-Bus (issue 3).

The fake systemd manager runs on a private ``dbus-daemon`` and carries out
unit-file changes with the real ``systemctl --root`` on the temp root.
"""

from __future__ import annotations

import json
import os
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
from mcd.host.systemd.dbus import DBusSystemd
from mcd.host.systemd.manager import JobFailed, SystemdUnavailable
from mcd.host.systemd.offline import OfflineSystemd
from tests.builders import mc, mc_doc
from tests.fakes.bus import SystemdBus

SERVICE = "[Unit]\nDescription=test\n[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n"
SERVICE_V2 = SERVICE.replace("multi-user.target", "graphical.target")
WANTS = "etc/systemd/system/multi-user.target.wants"


@pytest.fixture
def client(systemd_bus: SystemdBus) -> Iterator[DBusSystemd]:
    c = DBusSystemd(systemd_bus.address)
    try:
        yield c
    finally:
        c.close()


def effects(root: Path, client: DBusSystemd) -> HostEffects:
    return HostEffects(Root(root), client)


def test_units_written_enabled_and_disabled_over_dbus(
    node_root: Path, systemd_bus: SystemdBus, client: DBusSystemd
) -> None:
    cfg = mc(units=[
        {"name": "app.service", "contents": SERVICE, "enabled": True},
        {"name": "off.service", "contents": SERVICE, "enabled": False},
        {"name": "plain.service", "contents": SERVICE},
        {"name": "side.service", "contents": SERVICE,
         "dropins": [{"name": "10-env.conf", "contents": "[Service]\nEnvironment=A=1\n"}]},
    ])  # fmt: skip
    effects(node_root, client).write_units(cfg.ignition.units)
    unit_dir = node_root / "etc/systemd/system"
    assert (unit_dir / "app.service").read_text() == SERVICE
    assert oct((unit_dir / "app.service").stat().st_mode & 0o777) == "0o644"
    assert (unit_dir / "side.service.d/10-env.conf").read_text() == "[Service]\nEnvironment=A=1\n"
    assert (node_root / WANTS / "app.service").is_symlink()
    assert not (node_root / WANTS / "off.service").exists()
    calls = systemd_bus.calls("EnableUnitFiles", "DisableUnitFiles", "PresetUnitFiles")
    assert {"member": "EnableUnitFiles", "args": [["app.service"], False, False]} in calls
    assert {"member": "DisableUnitFiles", "args": [["off.service"], False]} in calls
    presets = [c["args"][0] for c in calls if c["member"] == "PresetUnitFiles"]
    assert ["plain.service"] in presets and ["side.service"] in presets
    assert client.unit_file_state("app.service") == "enabled"
    assert client.unit_file_state("off.service") == "disabled"


def test_enabled_unit_is_disabled_before_its_file_is_rewritten(
    node_root: Path, systemd_bus: SystemdBus, client: DBusSystemd
) -> None:
    fx = effects(node_root, client)
    fx.write_units(
        mc(units=[{"name": "app.service", "contents": SERVICE, "enabled": True}]).ignition.units
    )
    assert (node_root / WANTS / "app.service").is_symlink()
    fx.write_units(
        mc(units=[{"name": "app.service", "contents": SERVICE_V2, "enabled": True}]).ignition.units
    )
    members = [c["member"] for c in systemd_bus.calls("EnableUnitFiles", "DisableUnitFiles")]
    assert members == ["EnableUnitFiles", "DisableUnitFiles", "EnableUnitFiles"]
    assert not (node_root / WANTS / "app.service").exists()  # old WantedBy= is gone
    assert (node_root / "etc/systemd/system/graphical.target.wants/app.service").is_symlink()


def test_mask_and_unmask(node_root: Path, systemd_bus: SystemdBus, client: DBusSystemd) -> None:
    fx = effects(node_root, client)
    unit = node_root / "etc/systemd/system/noisy.service"
    unit.write_text(SERVICE)
    fx.write_units(mc(units=[{"name": "noisy.service", "mask": True}]).ignition.units)
    assert unit.is_symlink() and os.readlink(unit) == "/dev/null"
    assert client.unit_file_state("noisy.service") == "masked"
    fx.write_units(mc(units=[{"name": "noisy.service", "mask": False}]).ignition.units)
    assert not os.path.lexists(unit)
    members = [c["member"] for c in systemd_bus.calls("MaskUnitFiles", "UnmaskUnitFiles")]
    assert members == ["MaskUnitFiles", "UnmaskUnitFiles"]


def test_empty_dropin_removes_the_dropin(node_root: Path, client: DBusSystemd) -> None:
    dropin = node_root / "etc/systemd/system/crio.service.d/10-old.conf"
    dropin.parent.mkdir(parents=True)
    dropin.write_text("[Service]\n")
    effects(node_root, client).write_units(
        mc(units=[{"name": "crio.service", "dropins": [{"name": "10-old.conf"}]}]).ignition.units
    )
    assert not dropin.exists()


def test_unit_without_contents_is_not_written(
    node_root: Path, systemd_bus: SystemdBus, client: DBusSystemd
) -> None:
    effects(node_root, client).write_units(
        mc(units=[{"name": "ghost.service", "enabled": True}]).ignition.units
    )
    assert not (node_root / "etc/systemd/system/ghost.service").exists()
    assert systemd_bus.calls("EnableUnitFiles") == []  # unknown to systemd: skipped, as upstream


def test_units_leaving_the_config_are_preset_then_removed(
    node_root: Path, systemd_bus: SystemdBus, client: DBusSystemd
) -> None:
    fx = effects(node_root, client)
    old = mc(units=[{"name": "gone.service", "contents": SERVICE, "enabled": True,
                     "dropins": [{"name": "10-x.conf", "contents": "[Service]\n"}]}])  # fmt: skip
    fx.write_units(old.ignition.units)
    fx.delete_stale_data(old.ignition, mc(units=[]).ignition)
    assert not (node_root / "etc/systemd/system/gone.service").exists()
    assert not (node_root / "etc/systemd/system/gone.service.d/10-x.conf").exists()
    assert {
        "member": "PresetUnitFiles",
        "args": [["gone.service"], False, False],
    } in systemd_bus.calls()


def test_restart_and_reload_wait_for_the_job_result(
    systemd_bus: SystemdBus, client: DBusSystemd, node_root: Path
) -> None:
    (node_root / "etc/systemd/system/crio.service").write_text(SERVICE)
    client.restart("crio.service")
    client.reload("crio.service")
    client.daemon_reload()
    systemd_bus.fail_job("crio.service", "failed")
    with pytest.raises(JobFailed, match=r"restarting crio\.service failed: job result 'failed'"):
        client.restart("crio.service")
    members = [c["member"] for c in systemd_bus.calls("RestartUnit", "ReloadUnit", "Reload")]
    assert members == ["RestartUnit", "ReloadUnit", "Reload", "RestartUnit"]


def test_reboot_is_ordered_after_ostree_finalize_staged(
    systemd_bus: SystemdBus, client: DBusSystemd, node_root: Path
) -> None:
    vendor = node_root / "usr/lib/systemd/system"
    vendor.mkdir(parents=True)
    (vendor / "ostree-finalize-staged.service").write_text("[Service]\nExecStop=/bin/true\n")
    client.reboot("Node will reboot into config rendered-worker-2")
    (call,) = systemd_bus.calls("StartTransientUnit")
    name, mode, props, _aux = call["args"]
    assert (name, mode) == ("machine-config-daemon-reboot.service", "fail")
    by_name = {p[0]: p[1]["value"] for p in props}
    assert (
        by_name["Description"]
        == "machine-config-daemon: Node will reboot into config rendered-worker-2"
    )
    assert by_name["ExecStart"] == [["/bin/sh", ["/bin/sh", "-c", "systemctl reboot"], False]]
    assert by_name["Requires"] == ["ostree-finalize-staged.service"]
    assert by_name["After"] == ["ostree-finalize-staged.service"]


def test_reboot_without_ostree_has_no_ordering(
    systemd_bus: SystemdBus, client: DBusSystemd
) -> None:
    client.reboot("r")
    (call,) = systemd_bus.calls("StartTransientUnit")
    assert {p[0] for p in call["args"][2]} == {"Description", "ExecStart"}


def test_validation_checks_enablement(node_root: Path, client: DBusSystemd) -> None:
    cfg = mc("rendered-worker-1", units=[
        {"name": "on.service", "contents": SERVICE, "enabled": True},
        {"name": "off.service", "contents": SERVICE, "enabled": False},
    ])  # fmt: skip
    effects(node_root, client).write_units(cfg.ignition.units)
    assert validate_on_disk(cfg, Root(node_root), client).ok
    client.disable(["on.service"])
    client.enable(["off.service"])
    reasons = validate_on_disk(cfg, Root(node_root), client).reasons()
    assert reasons == [
        'unexpected on-disk state validating against rendered-worker-1: unit "on.service" expected enabled=true, but systemd reports "disabled"',
        'unexpected on-disk state validating against rendered-worker-1: unit "off.service" expected enabled=false, but systemd reports "enabled"',
    ]


def test_connect_finds_the_manager_or_falls_back_offline(
    node_root: Path, systemd_bus: SystemdBus, tmp_path: Path
) -> None:
    live = connect(Root(node_root), Runner(), address=systemd_bus.address)
    try:
        assert live.live
    finally:
        live.close()
    offline = connect(Root(tmp_path / "nothing-here"), Runner())
    assert isinstance(offline, OfflineSystemd)


def test_offline_root_uses_systemctl_root_and_refuses_live_actions(node_root: Path) -> None:
    systemd = OfflineSystemd(Root(node_root), Runner())
    fx = HostEffects(Root(node_root), systemd)
    fx.write_units(
        mc(units=[{"name": "app.service", "contents": SERVICE, "enabled": True}]).ignition.units
    )
    assert (node_root / WANTS / "app.service").is_symlink()
    assert systemd.unit_file_state("app.service") == "enabled"
    assert systemd.unit_file_state("missing.service") == "not-found"
    with pytest.raises(
        SystemdUnavailable, match=r"cannot restart crio\.service: no systemd manager"
    ):
        systemd.restart("crio.service")
    with pytest.raises(SystemdUnavailable, match="cannot reboot"):
        systemd.reboot("x")


def test_cli_validate_asks_the_nodes_systemd(
    node_root: Path, systemd_bus: SystemdBus, client: DBusSystemd, tmp_path: Path
) -> None:
    doc = mc_doc(
        "rendered-worker-1", units=[{"name": "on.service", "contents": SERVICE, "enabled": True}]
    )
    config = tmp_path / "mc.json"
    config.write_text(json.dumps(doc))
    (node_root / "etc/systemd/system/on.service").write_text(SERVICE)
    env = {"DBUS_SYSTEM_BUS_ADDRESS": systemd_bus.address}
    result = CliRunner().invoke(cli, ["validate", str(config), "--root", str(node_root)], env=env)
    assert result.exit_code == 2
    assert (
        'unit "on.service" expected enabled=true, but systemd reports "disabled"' in result.output
    )
    assert systemd_bus.calls("GetUnitFileState")
    client.enable(["on.service"])
    result = CliRunner().invoke(cli, ["validate", str(config), "--root", str(node_root)], env=env)
    assert result.exit_code == 0, result.output
