"""Kernel arguments on a Debian node through GRUB's own tools (issue 34), in a real systemd
container whose rootfs carries Debian's ``grub2-common`` and ``grub-pc-bin``: mcd runs INSIDE
it with ``--root /`` (as an admin on the node would), writes its managed drop-in under
``/etc/default/grub.d/``, and Debian's ``update-grub`` (``grub-mkconfig``, its ``00_header``
and ``10_linux`` scripts, sourcing ``/etc/default/grub`` and the drop-ins) writes
``/boot/grub/grub.cfg``; the test reads the kernel command lines GRUB would boot.

One part is not real: ``grub-probe``. A container has no disk under its ``/``, and
``grub-mkconfig`` asks ``grub-probe`` for the root device before anything else, so it is
diverted (``dpkg-divert``) to a script that names a fixed disk. Everything that turns the
configuration into ``grub.cfg`` is GRUB's.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcd.model.osupdate.bootargs import GRUB_DROPIN
from mcd.model.vocabulary import CURRENT_CONFIG_PATH
from tests.builders import file_entry, mc_doc
from tests.real.inside import InsideNode, booted_container
from tests.real.systemd_container import GRUB_PACKAGES

pytestmark = pytest.mark.xdist_group("real-grub")  # one container for the module
KERNEL = "6.1.0-mcd-amd64"
GRUB_PROBE = """#!/bin/sh
# stand-in for grub-probe in a container (no disk under /): a fixed ext4 partition
target=""
for arg in "$@"; do case "$arg" in --target=*) target="${arg#--target=}";; esac; done
case "$target" in
  device) echo /dev/vda1 ;;
  fs) echo ext2 ;;
  fs_uuid) echo 0f2c6e55-7d3b-4c1e-9d59-3f0e0a1b2c3d ;;
  partuuid) echo 5e1d0a77-01 ;;
  partmap) echo msdos ;;
  abstraction) ;;
  drive) echo "(hd0,msdos1)" ;;
  compatibility_hint) echo hd0,msdos1 ;;
  hints_string) echo "--hint-bios=hd0,msdos1" ;;
  bios_hints) echo "--hint-bios=hd0,msdos1" ;;
  *) ;;
esac
"""
DEBIAN = "Debian GNU/Linux 12 (bookworm)"


class Node(InsideNode):
    def config(self, name: str, **spec: Any) -> str:
        return self.write_config(
            name, mc_doc(name, files=[file_entry("/etc/motd", f"{name}\n", 0o644)], **spec)
        )

    def booted_arguments(self) -> list[list[str]]:
        """The kernel command line of every ``linux`` entry in ``grub.cfg``, after
        ``root=... ro``: what this node would boot with."""
        text = self.path("/boot/grub/grub.cfg").read_text()
        lines = [ln.split() for ln in text.splitlines() if re.match(r"\s*linux\s", ln)]
        assert lines, text
        return [ln[ln.index("ro") + 1 :] for ln in lines]

    def expect_booted(self, args: list[str]) -> None:
        """Every entry boots with exactly ``args`` from mcd: the normal ones before Debian's
        ``GRUB_CMDLINE_LINUX_DEFAULT`` (``quiet``), the recovery ones after ``single``."""
        entries = self.booted_arguments()
        args = " ".join(args).split()  # grub.cfg's words (a quoted argument may hold spaces)
        normal = [e for e in entries if e[:1] != ["single"]]
        recovery = [e for e in entries if e[:1] == ["single"]]
        assert normal and recovery, entries
        assert normal == [[*args, "quiet"]] * len(normal)
        assert recovery == [["single", *args]] * len(recovery)


@pytest.fixture(scope="module")
def node() -> Iterator[Node]:
    def prepare(root: Path) -> None:
        shutil.copy(root / "usr/share/grub/default/grub", root / "etc/default/grub")
        (root / "boot/grub").mkdir(parents=True)  # grub-install made it on a real node
        for image in (f"vmlinuz-{KERNEL}", f"initrd.img-{KERNEL}"):
            (root / "boot" / image).write_bytes(b"\0")

    with booted_container(prepare, packages=GRUB_PACKAGES) as container:
        n = Node(container)
        n.sh("dpkg-divert", "--local", "--rename", "--add", "/usr/sbin/grub-probe")
        probe = container.root / "usr/sbin/grub-probe"
        probe.write_text(GRUB_PROBE)
        probe.chmod(0o755)
        n.sh("update-grub")
        n.expect_booted([])
        yield n


def test_once_from_adds_replaces_and_removes_kernel_arguments_through_update_grub(
    node: Node,
) -> None:
    code, _, err = node.mcd(
        "once-from", node.config("rendered-worker-1", kernelArguments=[
            "nosmt", "foo=bar baz", 'acpi_osi="Windows 2020"']),
        "--root", "/", "--skip-reboot",
    )  # fmt: skip
    assert code == 0, err
    assert node.current() == "rendered-worker-1"
    assert (
        "'nosmt foo=bar baz acpi_osi=\"Windows 2020\"'" in node.path(GRUB_DROPIN).read_text()
    )  # single-quoted for the shell that sources it
    node.expect_booted(["nosmt", "foo=bar", "baz", 'acpi_osi="Windows 2020"'])

    # the old config's arguments all go, the new ones come, in their order
    code, _, err = node.mcd(
        "once-from", node.config("rendered-worker-2", kernelArguments=["mitigations=auto,nosmt",
                                                                         "nosmt"]),
        "--root", "/", "--skip-reboot",
    )  # fmt: skip
    assert code == 0, err
    node.expect_booted(["mitigations=auto,nosmt", "nosmt"])

    code, _, err = node.mcd(
        "once-from", node.config("rendered-worker-3"), "--root", "/", "--skip-reboot"
    )  # fmt: skip
    assert code == 0, err
    assert not node.path(GRUB_DROPIN).exists()
    node.expect_booted([])


def test_validate_finds_the_managed_drop_in_changed_by_hand(node: Node) -> None:
    source = node.config("rendered-worker-4", kernelArguments=["nosmt"])
    code, _, err = node.mcd("once-from", source, "--root", "/", "--skip-reboot")
    assert code == 0, err
    code, out, err = node.mcd("validate", source, "--root", "/")
    assert code == 0, out + err
    dropin = node.path(GRUB_DROPIN)
    dropin.write_text(dropin.read_text().replace("nosmt", "nosmt quiet=0"))
    code, out, _ = node.mcd("validate", source, "--root", "/")
    assert code == 2
    assert f'content mismatch for file "{GRUB_DROPIN}"' in out
    # the next update rewrites it from the config, and grub.cfg follows
    code, _, err = node.mcd(
        "once-from", node.config("rendered-worker-5", kernelArguments=["nosmt=force"]),
        "--root", "/", "--skip-reboot",
    )  # fmt: skip
    assert code == 0, err
    node.expect_booted(["nosmt=force"])


def test_fields_a_debian_node_cannot_apply_are_refused_by_name_and_nothing_changes(
    node: Node,
) -> None:
    code, _, err = node.mcd(
        "once-from", node.config("rendered-worker-6"), "--root", "/", "--skip-reboot"
    )  # fmt: skip
    assert code == 0, err
    before = node.path("/boot/grub/grub.cfg").read_bytes()
    for name, spec, field in (
        ("rendered-worker-7", {"kernelType": "realtime"}, "spec.kernelType"),
        ("rendered-worker-8", {"extensions": ["usbguard"]}, "spec.extensions"),
        ("rendered-worker-9", {"osImageURL": "quay.io/example/os@sha256:" + "a" * 64},
         "spec.osImageURL"),
    ):  # fmt: skip
        new = node.config(name, **spec)
        code, out, err = node.mcd("plan", "--root", "/", CURRENT_CONFIG_PATH, new)
        assert code == 2, out + err
        assert field in out and DEBIAN in out
        code, _, err = node.mcd("once-from", f"/var/tmp/{name}.json", "--root", "/")
        assert code != 0
        assert f"cannot apply {name} on this node ({DEBIAN}): {field}" in err
        assert node.current() == "rendered-worker-6"  # nothing written, no reboot
        assert node.path("/etc/motd").read_text() == "rendered-worker-6\n"
        assert node.path("/boot/grub/grub.cfg").read_bytes() == before
    # what update-grub fails on ("syntax error") or grub.cfg would read as a comment: refused
    # by the config gate, on this node as on any, before anything is written
    for name, karg, why in (
        ("rendered-worker-10", "it's=$HOME", "\"it's=$HOME\" has $ '"),
        ("rendered-worker-11", "#quiet", '"#quiet" starts with #'),
        ("rendered-worker-12", 'acpi_osi="Windows', "unbalanced double quote"),
    ):
        new = node.config(name, kernelArguments=["nosmt", karg])
        code, out, err = node.mcd("plan", "--root", "/", CURRENT_CONFIG_PATH, new)
        assert code == 2, out + err
        assert "spec.kernelArguments[1]: invalid kernel argument " in out and why in out
        code, _, err = node.mcd("once-from", f"/var/tmp/{name}.json", "--root", "/")
        assert code == 2, err
        assert "spec.kernelArguments[1]: invalid kernel argument " in err and why in err
        assert node.current() == "rendered-worker-6"
        assert node.path("/boot/grub/grub.cfg").read_bytes() == before
        assert not node.path(GRUB_DROPIN).exists()
    assert node.c.running  # never rebooted
