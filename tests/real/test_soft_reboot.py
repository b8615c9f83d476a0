"""Soft reboots on a real systemd that has them (issue 34): a Debian trixie rootfs (systemd 257)
booted in ``systemd-nspawn``. A change that needs a reboot but no new kernel, on a node whose
setting allows it, is applied with ``systemctl soft-reboot``: userspace restarts in the same
container, the boot id stays, systemd counts one soft reboot, and the agent (started again, as
the kubelet restarts its pod after a soft reboot) proves it and reports Done.

A soft reboot stops every mount unit but the API file systems, the bind mount of ``/run/dbus``
the other real tests reach the bus through included; the bus gets a second socket in the
root's own file system (a ``dbus.socket`` drop-in), which the host reaches as a path under
the root before and after.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcd.model.planning.rebootkind import SOFT_REBOOT_ANNOTATION
from mcd.model.vocabulary import Annotation
from tests.e2e.configs import worker
from tests.e2e.harness import create_config
from tests.e2e.scenarios import install
from tests.fakes.kubecluster import TestCluster
from tests.real.agent_node import RealSystemdNode
from tests.real.systemd_container import SystemdContainer, unavailable

TRIXIE = ["systemd", "systemd-sysv", "dbus"]
BUS = "var/lib/mcd-bus/system_bus_socket"


class TrixieNode(RealSystemdNode):
    def new_container(self) -> SystemdContainer:
        return SystemdContainer(packages=TRIXIE, suite="trixie")

    def prepare_root(self, root: Path) -> None:
        (root / BUS).parent.mkdir(parents=True)
        dropin = root / "etc/systemd/system/dbus.socket.d/mcd-test.conf"
        dropin.parent.mkdir(parents=True)
        dropin.write_text(f"[Socket]\nListenStream=/{BUS}\n")

    @property
    def bus_address(self) -> str:
        return f"unix:path={self.root / BUS}"

    def manager(self, prop: str) -> str:
        result = subprocess.run(
            ["busctl", f"--address={self.bus_address}", "--timeout=5", "get-property",
             "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
             "org.freedesktop.systemd1.Manager", prop],
            capture_output=True, text=True, check=False, timeout=30,
        )  # fmt: skip
        return result.stdout.strip().split(" ", 1)[-1].strip('"')

    def kernel_boot_id(self) -> str:
        return self.container.run("cat", "/proc/sys/kernel/random/boot_id").stdout.strip()


@pytest.fixture
def node(kube_cluster: TestCluster, tmp_path: Path) -> Iterator[TrixieNode]:
    why = unavailable()
    if why:
        pytest.skip(f"real systemd: {why}")
    try:
        n = TrixieNode(kube_cluster, tmp_path / "node", "trixie")
    except RuntimeError as e:  # no trixie on the mirror: say so
        pytest.skip(f"no Debian trixie rootfs: {e}")
    try:
        yield n
    finally:
        n.close()


def test_a_reboot_without_a_new_kernel_is_a_soft_reboot_that_keeps_the_boot_id(
    node: TrixieNode, kube_cluster: TestCluster
) -> None:
    assert node.manager("Version").startswith("257")
    first = install(node, kube_cluster, worker(kube_cluster.name("rendered-worker-1"), image=""),
                    {SOFT_REBOOT_ANNOTATION: "true"})  # fmt: skip
    node.start()
    node.wait_ready()
    node.wait_state("Done", first, timeout=60)
    boot_id, kernel_boot = (
        node.path("/proc/sys/kernel/random/boot_id").read_text(),
        (node.kernel_boot_id()),
    )
    assert node.manager("SoftRebootsCount") == "0"

    second = kube_cluster.name("rendered-worker-2")
    create_config(kube_cluster, worker(second, image="", app="threads=8\n"))
    node.set_desired(second)
    node.wait_for(lambda: node.manager("SoftRebootsCount") == "1", 90, "a soft reboot")
    node.wait_for(lambda: node.manager("SystemState") in ("running", "degraded"), 60, "running")
    assert node.container.running and node.container.exits == []  # no full reboot
    assert node.path("/etc/app/app.conf").read_text() == "threads=8\n"
    events = [e["message"] for e in node.events("Reboot")]
    assert f"Node will soft-reboot into config {second}" in events
    node.stop()  # the soft reboot ended the agent's pod: the kubelet starts it again
    node.start()
    node.wait_state("Done", second, timeout=60)
    assert node.annotations()[Annotation.POST_CONFIG_ACTION] == ""
    proof = node.wait_events("Reboot", count=2)[-1]["message"]
    assert proof.startswith(f"Soft reboot into config {second} done: boot id ")
    assert proof.endswith("soft reboots 0 -> 1")
    assert node.path("/proc/sys/kernel/random/boot_id").read_text() == boot_id
    assert node.kernel_boot_id() == kernel_boot
    assert node.container.exits == [] and node.current_on_disk() == second
