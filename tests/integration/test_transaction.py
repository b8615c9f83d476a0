"""The update transaction on a temp root: OS pivots through the rpm-ostree stand-in, reboots
through the fake systemd on a private D-Bus, rollback, the force file (issue 4)."""

from __future__ import annotations

import json
import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from mcd.agent.commands.once import node_for, once_from
from mcd.agent.update.handles import Node
from mcd.agent.update.journal import JOURNAL
from mcd.agent.update.transaction import Outcome, UpdateError
from mcd.cli import cli
from mcd.host.rootfs import Root
from mcd.host.systemd.dbus import DBusSystemd
from mcd.model.vocabulary import CURRENT_CONFIG_PATH, FORCE_FILE
from tests.builders import file_entry, mc_doc
from tests.fakes import rpm_ostree
from tests.fakes.bus import SystemdBus

BIN = Path(__file__).resolve().parents[1] / "fakes" / "bin"
IMAGE_A = "quay.io/openshift/os@sha256:aaaa"
IMAGE_B = "quay.io/openshift/os@sha256:bbbb"
UNIT = "[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n"


class OstreeNode:
    def __init__(self, root: Path, state: Path, bus: SystemdBus) -> None:
        self.root, self.state, self.bus = root, state, bus
        self.client = DBusSystemd(bus.address)
        self.node: Node = node_for(Root(root), self.client)

    def write_config(self, name: str, **kwargs: Any) -> Path:
        path = self.root.parent / f"{name}.json"
        path.write_text(json.dumps(mc_doc(name, **kwargs)))
        return path

    def apply(self, source: Path, skip_reboot: bool = False) -> Outcome:
        return once_from(str(source), self.node, skip_reboot=skip_reboot)

    def reboot(self) -> None:
        """The harness's reboot: boot the staged deployment, new boot id."""
        assert rpm_ostree.boot_staged(self.state)
        (self.root / "proc/sys/kernel/random/boot_id").write_text(str(uuid.uuid4()))

    def rpm(self) -> dict[str, Any]:
        return rpm_ostree.load(self.state)

    def current(self) -> str:
        data = json.loads((self.root / CURRENT_CONFIG_PATH.lstrip("/")).read_text())
        return str(data["metadata"]["name"])


@pytest.fixture
def ostree(
    node_root: Path, systemd_bus: SystemdBus, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[OstreeNode]:
    state = tmp_path / "rpm-ostree.json"
    rpm_ostree.save(state, rpm_ostree.new_state(IMAGE_A))
    monkeypatch.setenv("PATH", f"{BIN}:{os.environ['PATH']}")
    monkeypatch.setenv("MCD_FAKE_RPMOSTREE_STATE", str(state))
    monkeypatch.setenv("MCD_TEST_PYTHON", sys.executable)
    (node_root / "run").mkdir()
    (node_root / "run/ostree-booted").write_text("")
    (node_root / "proc/sys/kernel/random").mkdir(parents=True)
    (node_root / "proc/sys/kernel/random/boot_id").write_text(str(uuid.uuid4()))
    node = OstreeNode(node_root, state, systemd_bus)
    try:
        yield node
    finally:
        node.client.close()


def test_os_pivot_stages_reboots_and_completes_after_the_reboot(ostree: OstreeNode) -> None:
    old = ostree.write_config(
        "rendered-worker-1", osImageURL=IMAGE_A, files=[file_entry("/etc/a", "1")]
    )
    assert ostree.apply(old, skip_reboot=True) is Outcome.REBOOT_PENDING
    assert ostree.current() == "rendered-worker-1"
    new = ostree.write_config("rendered-worker-2", osImageURL=IMAGE_B, files=[file_entry("/etc/a", "2")],
                              kernelArguments=["nosmt", "mitigations=auto"])  # fmt: skip
    assert ostree.apply(new) is Outcome.REBOOTING
    staged = [d for d in ostree.rpm()["deployments"] if d["staged"]]
    assert (
        staged and staged[0]["container-image-reference"] == f"ostree-unverified-registry:{IMAGE_B}"
    )
    assert {"nosmt", "mitigations=auto"} <= set(staged[0]["kargs"])
    calls = [c["argv"] for c in ostree.rpm()["calls"]]
    assert ["rebase", "--experimental", f"ostree-unverified-registry:{IMAGE_B}"] in calls
    assert all(c["client"] == "machine-config-operator" for c in ostree.rpm()["calls"])
    # useMergedPullSecrets: rpm-ostree pulls with the cluster pull secret (a link, not a copy)
    assert os.readlink(ostree.root / "run/ostree/auth.json") == "/var/lib/kubelet/config.json"
    assert ostree.bus.calls("StartTransientUnit")  # the reboot was asked of systemd
    assert ostree.current() == "rendered-worker-1"  # not promoted before the new deployment boots
    assert (ostree.root / JOURNAL.lstrip("/")).exists()

    ostree.reboot()
    assert ostree.apply(new) is Outcome.DONE
    assert ostree.current() == "rendered-worker-2"
    assert (ostree.root / "etc/a").read_text() == "2"
    assert not (ostree.root / JOURNAL.lstrip("/")).exists()
    assert len(ostree.bus.calls("StartTransientUnit")) == 1


def test_booting_the_old_deployment_is_detected_and_the_update_retried(ostree: OstreeNode) -> None:
    old = ostree.write_config("rendered-worker-1", osImageURL=IMAGE_A)
    ostree.apply(old, skip_reboot=True)
    new = ostree.write_config("rendered-worker-2", osImageURL=IMAGE_B)
    assert ostree.apply(new) is Outcome.REBOOTING
    # the node comes back on the old deployment (ostree-finalize-staged failed): new boot id only
    state = ostree.rpm()
    state["deployments"] = [d for d in state["deployments"] if not d["staged"]]
    rpm_ostree.save(ostree.state, state)
    (ostree.root / "proc/sys/kernel/random/boot_id").write_text(str(uuid.uuid4()))
    assert ostree.apply(new) is Outcome.REBOOTING  # staged again, reboot asked again
    assert ostree.current() == "rendered-worker-1"
    assert len(ostree.bus.calls("StartTransientUnit")) == 2
    ostree.reboot()
    assert ostree.apply(new) is Outcome.DONE
    assert ostree.current() == "rendered-worker-2"


def test_rebase_failure_restores_files_and_units_and_leaves_the_os(
    ostree: OstreeNode, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = ostree.write_config("rendered-worker-1", osImageURL=IMAGE_A,
                              files=[file_entry("/etc/keep", "old\n")],
                              units=[{"name": "app.service", "contents": UNIT, "enabled": True}])  # fmt: skip
    ostree.apply(old, skip_reboot=True)
    new = ostree.write_config("rendered-worker-2", osImageURL=IMAGE_B,
                              files=[file_entry("/etc/keep", "new\n"), file_entry("/etc/only-new", "x")],
                              units=[{"name": "app.service", "contents": UNIT + "# v2\n", "enabled": True}])  # fmt: skip
    state = ostree.rpm()
    state["fail"]["rebase"] = (
        "error: Creating importer: failed to invoke method OpenImage: pinging container registry quay.io: connection refused"
    )
    state["fail_times"]["rebase"] = 99
    rpm_ostree.save(ostree.state, state)
    retry = ostree.node.rpm.retry  # type: ignore[union-attr]
    retry.attempts, retry.sleep = 3, lambda _s: None
    with pytest.raises(
        UpdateError, match=r"failed to update OS to .* after retries: .*connection refused"
    ):
        ostree.apply(new)
    assert (ostree.root / "etc/keep").read_text() == "old\n"
    assert not (ostree.root / "etc/only-new").exists()
    assert (ostree.root / "etc/systemd/system/app.service").read_text() == UNIT
    deployments = ostree.rpm()["deployments"]
    assert len(deployments) == 1 and deployments[0]["booted"]  # the OS is untouched
    assert ostree.current() == "rendered-worker-1"
    assert not (ostree.root / JOURNAL.lstrip("/")).exists()
    assert sum(c["argv"][0] == "rebase" for c in ostree.rpm()["calls"]) == 3


def test_kernel_type_and_extensions_round_trip(ostree: OstreeNode) -> None:
    base = ostree.write_config("rendered-worker-1", osImageURL=IMAGE_A)
    ostree.apply(base, skip_reboot=True)
    rt = ostree.write_config(
        "rendered-worker-2", osImageURL=IMAGE_A, kernelType="realtime", extensions=["usbguard"]
    )
    assert ostree.apply(rt) is Outcome.REBOOTING
    ostree.reboot()
    assert ostree.apply(rt) is Outcome.DONE
    booted = next(d for d in ostree.rpm()["deployments"] if d["booted"])
    assert (
        "kernel-rt-core" in booted["requested-packages"]
        and "usbguard" in booted["requested-packages"]
    )
    assert "kernel" in booted["requested-base-removals"]
    back = ostree.write_config("rendered-worker-3", osImageURL=IMAGE_A)
    assert ostree.apply(back) is Outcome.REBOOTING
    ostree.reboot()
    assert ostree.apply(back) is Outcome.DONE
    booted = next(d for d in ostree.rpm()["deployments"] if d["booted"])
    assert booted["requested-packages"] == [] and booted["requested-base-removals"] == []


def test_drift_is_reported_and_the_force_file_recovers_with_a_reboot(ostree: OstreeNode) -> None:
    cfg = ostree.write_config(
        "rendered-worker-1", osImageURL=IMAGE_A, files=[file_entry("/etc/managed", "good\n")]
    )
    ostree.apply(cfg, skip_reboot=True)
    (ostree.root / "etc/managed").write_text("edited by hand\n")
    with pytest.raises(UpdateError, match='content mismatch for file "/etc/managed"'):
        ostree.apply(cfg)
    (ostree.root / FORCE_FILE.lstrip("/")).write_text("")
    assert ostree.apply(cfg) is Outcome.REBOOTING
    assert (ostree.root / "etc/managed").read_text() == "good\n"
    assert not (ostree.root / FORCE_FILE.lstrip("/")).exists()
    assert ostree.bus.calls("StartTransientUnit")


def cli_env(ostree: OstreeNode) -> dict[str, str]:
    return {
        "PATH": os.environ["PATH"],
        "MCD_FAKE_RPMOSTREE_STATE": str(ostree.state),
        "MCD_TEST_PYTHON": sys.executable,
        "DBUS_SYSTEM_BUS_ADDRESS": ostree.bus.address,
    }


def test_pivot_from_pullspec_with_tuning_and_exit_77(ostree: OstreeNode) -> None:
    root = ostree.root
    (root / "etc/pivot").mkdir()
    (root / "etc/pivot/image-pullspec").write_text(IMAGE_B + "\n")
    (root / "etc/pivot/kernel-args").write_text("ADD nosmt\nDELETE quiet\nADD rd.debug\n")
    (root / "etc/os-release").write_text('NAME="Red Hat Enterprise Linux CoreOS"\nID="rhcos"\n')
    (root / "proc/cmdline").write_text("BOOT_IMAGE=/vmlinuz root=UUID=abc rw quiet\n")
    runner = CliRunner()
    result = runner.invoke(
        cli, ["pivot", "-P", "--root", str(root), "--reboot"], env=cli_env(ostree)
    )
    assert result.exit_code == 0, result.output
    assert f"pivoted: {IMAGE_B}" in result.output
    assert not (root / "etc/pivot/image-pullspec").exists()
    staged = next(d for d in ostree.rpm()["deployments"] if d["staged"])
    assert staged["container-image-reference"].endswith(IMAGE_B)
    assert (
        "nosmt" in staged["kargs"] and "rd.debug" not in staged["kargs"]
    )  # only nosmt is tunable on EL
    assert ostree.bus.calls("StartTransientUnit")
    ostree.reboot()
    (root / "proc/cmdline").write_text("BOOT_IMAGE=/vmlinuz root=UUID=abc rw nosmt\n")
    result = runner.invoke(
        cli, ["pivot", IMAGE_B, "--root", str(root), "--unchanged-exit-77"], env=cli_env(ostree)
    )
    assert result.exit_code == 77, result.output


def test_firstboot_applies_the_encapsulated_config_and_reboots(ostree: OstreeNode) -> None:
    doc = mc_doc("rendered-worker-1", osImageURL=IMAGE_B, files=[file_entry("/etc/first", "boot\n")],
                 kernelArguments=["root=UUID=abc", "nosmt"])  # fmt: skip
    (ostree.root / "etc/ignition-machine-config-encapsulated.json").write_text(json.dumps(doc))
    result = CliRunner().invoke(
        cli,
        ["firstboot-complete-machineconfig", "--root-mount", str(ostree.root)],
        env=cli_env(ostree),
    )
    assert result.exit_code == 0, result.output
    assert (ostree.root / "etc/first").read_text() == "boot\n"
    assert (ostree.root / "etc/ignition-machine-config-encapsulated.json.bak").exists()
    assert not (ostree.root / "etc/ignition-machine-config-encapsulated.json").exists()
    staged = next(d for d in ostree.rpm()["deployments"] if d["staged"])
    assert staged["container-image-reference"].endswith(IMAGE_B)
    assert "nosmt" in staged["kargs"] and staged["kargs"].count("root=UUID=abc") == 1
    (call,) = ostree.bus.calls("StartTransientUnit")
    assert "Completing firstboot provisioning to rendered-worker-1" in json.dumps(call)
    ostree.reboot()
    assert (
        ostree.apply(ostree.root / "etc/ignition-machine-config-encapsulated.json.bak")
        is Outcome.DONE
    )
    assert ostree.current() == "rendered-worker-1"


def test_kernel_arguments_are_checked_after_the_reboot(ostree: OstreeNode) -> None:
    ostree.apply(ostree.write_config("rendered-worker-1", osImageURL=IMAGE_A), skip_reboot=True)
    new = ostree.write_config("rendered-worker-2", osImageURL=IMAGE_A, kernelArguments=["nosmt"])
    assert ostree.apply(new) is Outcome.REBOOTING
    ostree.reboot()
    state = ostree.rpm()
    next(d for d in state["deployments"] if d["booted"])["kargs"].remove("nosmt")  # lost on the way
    rpm_ostree.save(ostree.state, state)
    with pytest.raises(UpdateError, match=r"missing expected kernel arguments: \[nosmt\]"):
        ostree.apply(new)
    assert ostree.current() == "rendered-worker-1"


def test_firstboot_fips_config_on_a_fips_node(ostree: OstreeNode) -> None:
    """Upstream setNodeFipsIntoMC: firstboot compares against the node's FIPS mode."""
    (ostree.root / "proc/sys/crypto").mkdir(parents=True)
    (ostree.root / "proc/sys/crypto/fips_enabled").write_text("1\n")
    doc = mc_doc("rendered-worker-1", osImageURL=IMAGE_A, fips=True)
    (ostree.root / "etc/ignition-machine-config-encapsulated.json").write_text(json.dumps(doc))
    result = CliRunner().invoke(
        cli, ["firstboot-complete-machineconfig", "--root-mount", str(ostree.root)],
        env=cli_env(ostree),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    # nothing differs from the booted node (image, FIPS): no update, no reboot
    assert not (ostree.root / "etc/ignition-machine-config-encapsulated.json").exists()
    assert not ostree.bus.calls("StartTransientUnit")
