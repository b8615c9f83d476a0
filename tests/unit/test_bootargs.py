"""Kernel arguments through GRUB's drop-in and grubby, the reboot kind, and host detection
(issue 34). The drop-in's quoting is judged by a real shell sourcing it, as grub-mkconfig does."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from mcd.host.bootloader.detect import detect
from mcd.host.rootfs import Root
from mcd.model.osupdate.bootargs import grub_dropin, grubby_commands, missing_from_cmdline
from mcd.model.osupdate.kargs import parse_kernel_arguments
from mcd.model.planning.applicability import BOOTC, GRUB, GRUBBY, RPM_OSTREE, HostSupport
from mcd.model.planning.diff import MachineConfigDiff
from mcd.model.planning.rebootkind import RebootKind, choose, soft_reboot_allowed

# printable, no control characters (the gate refuses those), quotes and $ included
arg_text = st.text(
    st.characters(min_codepoint=0x20, max_codepoint=0x7E), min_size=1, max_size=20
).filter(lambda s: s.strip() != "")


def _sourced(dropin: bytes, before: str, tmp: Path) -> str:
    """``GRUB_CMDLINE_LINUX`` after a POSIX shell sources /etc/default/grub then the drop-in."""
    path = tmp / "dropin.cfg"
    path.write_bytes(dropin)
    script = f'GRUB_CMDLINE_LINUX={before!r}; . "$1"; printf %s "$GRUB_CMDLINE_LINUX"'
    result = subprocess.run(
        ["sh", "-c", script, "sh", str(path)], capture_output=True, text=True, check=True
    )
    return result.stdout


@settings(max_examples=60, deadline=None)
@given(st.lists(arg_text, min_size=1, max_size=4), st.sampled_from(["", "console=ttyS0"]))
def test_the_drop_in_appends_exactly_the_arguments_and_nothing_expands(
    entries: list[str], before: str
) -> None:
    args = parse_kernel_arguments(entries)
    dropin = grub_dropin(entries)
    if not args:
        assert dropin is None
        return
    assert dropin is not None
    with tempfile.TemporaryDirectory() as tmp:
        got = _sourced(dropin, before, Path(tmp))
    assert got == " ".join(([before] if before else []) + args)


def test_no_arguments_no_drop_in() -> None:
    assert grub_dropin([]) is None
    assert grub_dropin(["  "]) is None


@given(st.lists(arg_text, max_size=3), st.lists(arg_text, max_size=3))
def test_grubby_removes_every_old_argument_then_adds_every_new_one_in_order(
    old: list[str], new: list[str]
) -> None:
    commands = grubby_commands(old, new)
    old_args, new_args = parse_kernel_arguments(old), parse_kernel_arguments(new)
    expected = []
    if old_args:
        expected.append(["grubby", "--update-kernel=ALL", "--remove-args=" + " ".join(old_args)])
    if new_args:
        expected.append(["grubby", "--update-kernel=ALL", "--args=" + " ".join(new_args)])
    assert commands == expected


def test_missing_from_cmdline_compares_word_by_word() -> None:
    cmdline = "BOOT_IMAGE=/vmlinuz root=/dev/vda1 ro nosmt=force quiet\n"
    assert missing_from_cmdline(["nosmt", "quiet"], cmdline) == ["nosmt"]
    assert missing_from_cmdline(["nosmt=force quiet"], cmdline) == []
    # the kernel (and GRUB's parser) take quotes as grouping only
    booted = 'root=/dev/vda1 ro cgroup_no_v1=all "acpi_osi=Windows 2020" quiet'
    assert missing_from_cmdline(['cgroup_no_v1="all"', 'acpi_osi="Windows 2020"'], booted) == []
    assert missing_from_cmdline(['acpi_osi="Windows 2021"'], booted) == ['acpi_osi="Windows 2021"']


# -- the reboot kind ----------------------------------------------------------------------

diffs = st.builds(
    MachineConfigDiff,
    os_update=st.booleans(), kargs=st.booleans(), fips=st.booleans(), passwd=st.booleans(),
    files=st.booleans(), units=st.booleans(), kernel_type=st.booleans(),
    extensions=st.booleans(),
)  # fmt: skip
versions = st.sampled_from([0, 249, 252, 254, 255, 256, 257])


@given(st.booleans(), diffs, versions, st.booleans())
def test_a_soft_reboot_only_when_the_kernel_stays_the_pool_allows_it_and_systemd_has_it(
    reboot: bool, diff: MachineConfigDiff, version: int, allowed: bool
) -> None:
    host = HostSupport("Debian GNU/Linux 13 (trixie)", "", GRUB, version)
    choice = choose(reboot, diff, host, allowed)
    kernel = diff.os_update or diff.kargs or diff.fips or diff.kernel_type or diff.extensions
    if not reboot:
        assert choice.kind is RebootKind.NONE
    elif not kernel and allowed and version >= 256:
        assert choice.kind is RebootKind.SOFT
    else:
        assert choice.kind is RebootKind.FULL and choice.why
    assert choose(reboot, diff, None, allowed).kind is not RebootKind.SOFT


def test_the_reasons_for_a_full_reboot_are_said() -> None:
    files = MachineConfigDiff(files=True)
    old = HostSupport("Debian GNU/Linux 12 (bookworm)", "", GRUB, 252)
    assert choose(True, files, old, True).why == "systemd 252 has no soft-reboot (needs 256)"
    assert choose(True, files, old, False).why == (
        "soft reboot not enabled (mcd-project.github.io/soft-reboot)"
    )
    kargs = MachineConfigDiff(kargs=True, files=True)
    assert choose(True, kargs, old, True).why == ("the kernel or its command line changes (kargs)")
    assert [soft_reboot_allowed(v) for v in ("true", "True", "1", "", None, "yes")] == [
        True, True, False, False, False, False,
    ]  # fmt: skip


# -- detection ----------------------------------------------------------------------------


def _root(tmp: Path, files: dict[str, str]) -> Root:
    for path, text in files.items():
        p = tmp / path.lstrip("/")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return Root(tmp)


def test_detection_reads_what_is_on_the_root_never_the_name(tmp_path: Path) -> None:
    debian = _root(tmp_path / "debian", {
        "/etc/os-release": 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nID=debian\n',
        "/etc/default/grub": "GRUB_DEFAULT=0\n", "/usr/sbin/update-grub": "",
        "/usr/lib/x86_64-linux-gnu/systemd/libsystemd-shared-252.so": "",
    })  # fmt: skip
    assert detect(debian, rpm_ostree=True) == HostSupport(
        "Debian GNU/Linux 12 (bookworm)", "", GRUB, 252
    )
    fedora = _root(tmp_path / "fedora", {
        "/etc/os-release": 'NAME=Fedora\nID=fedora\nVERSION_ID=41\n',
        "/usr/bin/grubby": "", "/boot/loader/entries/x.conf": "",
        "/usr/lib64/systemd/libsystemd-shared-256.7-1.fc41.so": "",
    })  # fmt: skip
    assert detect(fedora, rpm_ostree=True) == HostSupport("fedora 41", "", GRUBBY, 256)
    coreos = _root(tmp_path / "coreos", {
        "/usr/lib/os-release": 'PRETTY_NAME="Red Hat Enterprise Linux CoreOS 9.6"\n',
        "/run/ostree-booted": "", "/usr/bin/bootc": "", "/usr/bin/rpm-ostree": "",
    })  # fmt: skip
    assert detect(coreos, rpm_ostree=True).os_image == RPM_OSTREE
    assert detect(coreos, rpm_ostree=True).kernel_arguments == RPM_OSTREE
    assert detect(coreos, rpm_ostree=False).os_image == BOOTC
    bootc_only = _root(tmp_path / "bootc", {"/run/ostree-booted": "", "/usr/bin/bootc": ""})
    assert detect(bootc_only, rpm_ostree=True).os_image == BOOTC  # a client, no rpm-ostree
    ubuntu_no_tools = _root(tmp_path / "bare", {
        "/etc/os-release": 'PRETTY_NAME="Ubuntu 24.04 LTS"\n', "/etc/default/grub": "",
    })  # fmt: skip
    assert detect(ubuntu_no_tools, rpm_ostree=True) == HostSupport("Ubuntu 24.04 LTS")
    assert detect(_root(tmp_path / "empty", {}), rpm_ostree=True) == HostSupport()
