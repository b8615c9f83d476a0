"""``mcd start`` on a Debian node with GRUB (issue 34): the agent adds and removes kernel
arguments through Debian's ``update-grub``, reboots the real systemd for them, and after the
boot checks the kernel command line; a field Debian cannot apply is refused by name, with no
drain and no reboot.

The node is a real systemd container of a Debian rootfs with ``grub2-common`` and
``grub-pc-bin`` (``tests/real/test_bootloader.py`` says why ``grub-probe`` is a stand-in).
The agent runs as in the DaemonSet, with the container's ``/`` as its root, so it runs
``chroot ROOT update-grub``. A container boots no kernel: the harness's next boot does what the
firmware and GRUB would, it writes the root's ``/proc/cmdline`` (what the agent reads there)
from the first entry of the ``grub.cfg`` that ``update-grub`` wrote.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcd.model.osupdate.bootargs import GRUB_DROPIN
from mcd.model.planning.applicability import HOST_SUPPORT_ANNOTATION, support_from_annotation
from mcd.model.vocabulary import Annotation
from tests.e2e.configs import worker
from tests.e2e.harness import create_config
from tests.e2e.scenarios import install
from tests.fakes.kubecluster import TestCluster
from tests.real.agent_node import RealSystemdNode
from tests.real.systemd_container import GRUB_PACKAGES, SystemdContainer, unavailable
from tests.real.test_bootloader import GRUB_PROBE, KERNEL

DEBIAN = "Debian GNU/Linux 12 (bookworm)"


class DebianGrubNode(RealSystemdNode):
    def new_container(self) -> SystemdContainer:
        return SystemdContainer(packages=GRUB_PACKAGES)

    def prepare_root(self, root: Path) -> None:
        shutil.copy(root / "usr/share/grub/default/grub", root / "etc/default/grub")
        (root / "boot/grub").mkdir(parents=True)
        for image in (f"vmlinuz-{KERNEL}", f"initrd.img-{KERNEL}"):
            (root / "boot" / image).write_bytes(b"\0")
        probe = root / "usr/sbin/grub-probe"  # the overlay's copy; the cached rootfs keeps its own
        probe.unlink()
        probe.write_text(GRUB_PROBE)
        probe.chmod(0o755)
        self._boot_cmdline(root)

    def _boot_cmdline(self, root: Path) -> None:
        """What the firmware and GRUB hand the kernel: the first entry of ``grub.cfg``."""
        cfg = root / "boot/grub/grub.cfg"
        line = "BOOT_IMAGE=/boot/vmlinuz root=/dev/vda1 ro quiet"
        if cfg.exists():
            entry = next(ln for ln in cfg.read_text().splitlines() if re.match(r"\s*linux\s", ln))
            line = "BOOT_IMAGE=" + " ".join(entry.split()[1:])
        (root / "proc/cmdline").write_text(line + "\n")

    def reboot(self, boot_staged: bool = False) -> None:
        if self.container.running:
            assert self.container.wait_exit(60) == 133
        self._boot_cmdline(self.root)
        super().reboot(boot_staged=False)  # no rpm-ostree deployments on this node

    def grub_arguments(self) -> list[str]:
        text = self.path("/boot/grub/grub.cfg").read_text()
        entry = next(ln for ln in text.splitlines() if re.match(r"\s*linux\s", ln)).split()
        return entry[entry.index("ro") + 1 :]


@pytest.fixture
def node(kube_cluster: TestCluster, tmp_path: Path) -> Iterator[DebianGrubNode]:
    why = unavailable()
    if why:
        pytest.skip(f"real systemd: {why}")
    n = DebianGrubNode(kube_cluster, tmp_path / "node", "debian")
    try:
        yield n
    finally:
        n.close()


def test_the_agent_adds_and_removes_kernel_arguments_through_update_grub_and_checks_the_boot(
    node: DebianGrubNode, kube_cluster: TestCluster
) -> None:
    first = install(node, kube_cluster, worker(kube_cluster.name("rendered-worker-1"), image=""))
    node.start()
    node.wait_ready()
    node.wait_for(lambda: HOST_SUPPORT_ANNOTATION in node.annotations(), 60, "host support")
    node.wait_state("Done", first, timeout=60)
    support = support_from_annotation(node.annotations()[HOST_SUPPORT_ANNOTATION])
    assert support is not None and support.os == DEBIAN and support.kernel_arguments == "grub"

    second = kube_cluster.name("rendered-worker-2")
    create_config(kube_cluster, worker(second, image="", kargs=["nosmt", "mcd.test=1"]))
    node.set_desired(second)
    node.wait_reboot(timeout=90)  # systemd ran the reboot: nspawn ended with 133
    assert node.grub_arguments() == ["nosmt", "mcd.test=1", "quiet"]
    node.reboot()
    node.wait_state("Done", second, timeout=60)  # /proc/cmdline carries them
    assert "nosmt mcd.test=1" in node.path("/proc/cmdline").read_text()

    third = kube_cluster.name("rendered-worker-3")
    create_config(kube_cluster, worker(third, image=""))
    node.set_desired(third)
    node.wait_reboot(count=2, timeout=90)
    assert node.grub_arguments() == ["quiet"]
    assert not node.path(GRUB_DROPIN).exists()
    node.reboot()
    node.wait_state("Done", third, timeout=60)

    # a kernel type Debian cannot apply: refused by name, no drain, no reboot
    fourth = kube_cluster.name("rendered-worker-4")
    create_config(kube_cluster, worker(fourth, image="", kernelType="realtime"))
    node.set_desired(fourth)
    node.wait_state("Unreconcilable", timeout=60)
    reason = node.annotations()[Annotation.REASON]
    assert f"cannot apply {fourth} on this node ({DEBIAN}): spec.kernelType" in reason
    assert node.container.running and node.container.exits == [133, 133]
    assert node.current_on_disk() == third
