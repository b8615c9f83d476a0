"""An e2e node whose host is a real systemd: the agent runs as in the DaemonSet, with the
container's ``/`` as its ``--root-mount`` and the container's system bus as the node's bus.

A reboot is real: the agent's transient ``machine-config-daemon-reboot.service`` runs
``systemctl reboot`` inside the container, ``systemd-nspawn`` ends with 133, and the harness
then does what the next boot does (the staged deployment boots, a new boot id, an empty
``/run``), boots the same root again and starts the agent again.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.e2e.harness import AgentNode
from tests.fakes import ostree_sysroot, rpm_ostree
from tests.fakes.kubecluster import TestCluster
from tests.real.systemd_container import REBOOT_EXIT, SystemdContainer, unavailable

CORE = {
    "etc/passwd": "core:x:1000:1000:CoreOS Admin:/home/core:/bin/bash\n",
    "etc/group": "core:x:1000:\n",
    "etc/shadow": "core:*:19000:0:99999:7:::\n",
}
OS_RELEASE = (
    'NAME="Red Hat Enterprise Linux CoreOS"\nID="rhcos"\nVARIANT_ID=coreos\n'
    'VERSION_ID="9.6"\nRHEL_VERSION="9.6"\nOPENSHIFT_VERSION="4.21"\n'
)
KEEP_IN_RUN = {"ostree-booted", "dbus"}


class RealSystemdNode(AgentNode):
    container: SystemdContainer

    def new_container(self) -> SystemdContainer:
        """The container this node boots (its image's packages and suite)."""
        return SystemdContainer()

    def prepare_root(self, root: Path) -> None:
        """What this node's image holds beyond the accounts, before its first boot: here an
        RHCOS node (its os-release, ``/run/ostree-booted``, FIPS off)."""
        (root / "usr/lib/os-release").write_text(OS_RELEASE)
        (root / "run/ostree-booted").write_text("")  # the agent's view of /run, beside the bus
        (root / "proc/sys/crypto").mkdir(parents=True, exist_ok=True)
        (root / "proc/sys/crypto/fips_enabled").write_text("0\n")  # as every RHCOS node has

    def make_host(self) -> Path:
        self.container = self.new_container()
        root = self.container.root
        for path, line in CORE.items():  # the image's own accounts stay (messagebus, ...)
            with (root / path).open("a") as f:
                f.write(line)
        (root / "home/core").mkdir(parents=True, exist_ok=True)
        (root / "proc/sys/kernel/random").mkdir(parents=True, exist_ok=True)
        self.prepare_root(root)
        try:
            self.container.boot()
        except BaseException:
            self.container.close()
            raise
        return root

    @property
    def bus_address(self) -> str:
        return self.container.address

    def reboots_requested(self) -> int:
        self.container.poll()
        return self.container.exits.count(REBOOT_EXIT)

    def reboot(self, boot_staged: bool = True) -> None:
        if self.container.running:
            assert self.container.wait_exit(60) == REBOOT_EXIT
        self.stop()  # what the node going down does to the agent
        if boot_staged:
            rpm_ostree.boot_staged(self.rpm_state)
        self.new_boot_id()
        for entry in (self.root / "run").iterdir():
            if entry.name not in KEEP_IN_RUN:
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry)
                else:
                    entry.unlink()
        self.container.boot()
        self.start()

    def close(self) -> None:
        try:
            self.kill()
        finally:
            self.container.close()
            if self.sysroot is not None:
                ostree_sysroot.purge(self.sysroot)


@contextmanager
def real_node(cluster: TestCluster, workdir: Path, base: str) -> Iterator[RealSystemdNode]:
    """A node of ``cluster`` on a real systemd, closed after; the test is skipped where the
    machine cannot run one."""
    why = unavailable()
    if why:
        pytest.skip(f"real systemd: {why}")
    node = RealSystemdNode(cluster, workdir, base)
    try:
        yield node
    finally:
        node.close()
