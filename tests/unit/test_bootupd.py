"""The boot loader update before an OS pivot (upstream ``runBootloaderUpdate``): who needs it,
in which order the node's service and the image's bootupctl are tried, and that a failure
never stops the pivot. The host tools are a stand-in that answers as they would (mokutil's
words, bootloader-update.service, podman and the image's ``bootupctl update``) and records
every command; nothing runs on the machine."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from mcd.agent.update import imagemode
from mcd.host.bootloader import bootupd
from mcd.host.bootloader.bootupd import BootloaderUpdateFailed, run_bootloader_update
from mcd.host.rootfs import Root
from mcd.host.runner import CommandError, CommandResult
from mcd.model.planning.plan import make_plan
from tests.builders import mc

IMAGE = "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:" + "e" * 64
RHCOS_96 = (
    'NAME="Red Hat Enterprise Linux CoreOS"\nID="rhcos"\nVARIANT_ID=coreos\nRHEL_VERSION=9.6\n'
)
RHCOS_94 = RHCOS_96.replace("9.6", "9.4")


class StandIn:
    """mokutil, systemctl, podman and systemd-run as a node would answer them."""

    def __init__(self, secure_boot: str | None = "SecureBoot enabled\n") -> None:
        self.secure_boot = secure_boot  # None: mokutil missing
        self.service_fails = False
        self.bootupctl_fails = False
        self.image_present = False
        self.calls: list[list[str]] = []

    def run(self, argv: list[str], *, check: bool = True, **_: object) -> CommandResult:
        self.calls.append(list(argv))
        shown = " ".join(argv)
        if argv[0] == "mokutil":
            if self.secure_boot is None:
                raise CommandError(shown, None, "mokutil: command not found")
            return CommandResult(tuple(argv), 0, self.secure_boot, "")
        if argv[:2] == ["systemctl", "start"] and self.service_fails:
            raise CommandError(
                shown, None, "Job for bootloader-update.service failed: exit status 1"
            )
        if argv[:3] == ["podman", "image", "exists"]:
            return CommandResult(tuple(argv), 0 if self.image_present else 1, "", "")
        if argv[-2:] == ["bootupctl", "update"] and self.bootupctl_fails:
            raise CommandError(shown, None, "error: renameat2: Invalid argument: exit status 1")
        return CommandResult(tuple(argv), 0, "", "")


def node(tmp_path: Path, release: str = RHCOS_96, bootupctl: bool = True) -> Root:
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/os-release").write_text(release)
    if bootupctl:
        (tmp_path / "usr/bin").mkdir(parents=True)
        (tmp_path / "usr/bin/bootupctl").write_text("#!/bin/sh\n")
    return Root(tmp_path)


def update(root: Root, tools: StandIn, arch: str = "x86_64") -> bool:
    return run_bootloader_update(root, IMAGE, tools, arch=lambda: arch)  # type: ignore[arg-type]


def test_on_rhel_9_6_the_nodes_own_service_updates_the_boot_loader(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    tools = StandIn()
    with caplog.at_level(logging.INFO):
        assert update(node(tmp_path), tools)
    assert tools.calls == [
        ["mokutil", "--sb-state"],
        ["systemctl", "start", "bootloader-update.service"],
    ]
    assert "runBootloaderUpdate: node-level bootloader-update.service succeeded" in caplog.text


def test_when_the_service_fails_bootupctl_runs_from_the_new_image(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    tools = StandIn()
    tools.service_fails = True
    (tmp_path / "var/lib/kubelet").mkdir(parents=True)
    (tmp_path / "var/lib/kubelet/config.json").write_text("{}")
    with caplog.at_level(logging.INFO):
        assert update(node(tmp_path), tools)
    unit = ["systemd-run", "--unit", "machine-config-daemon-bootupd", "-p",
            "EnvironmentFile=-/etc/mco/proxy.env", "--collect", "--wait", "--", "podman"]  # fmt: skip
    assert tools.calls[2:4] == [
        ["podman", "image", "exists", IMAGE],
        [*unit, "pull", "--authfile", "/var/lib/kubelet/config.json", IMAGE],
    ]
    run = tools.calls[4]
    assert run[:10] == ["systemd-run", "--unit", "machine-config-daemon-bootupd-update", "-p",
                        "EnvironmentFile=-/etc/mco/proxy.env", "--collect", "--wait", "--",
                        "podman", "run"]  # fmt: skip
    assert run[10] == "--env" and run[11].startswith("INVOCATION_ID=")
    assert run[12:] == ["--privileged", "--pid=host", "--net=host", "--rm", "-v",
                        "/boot:/boot:rslave", "-v", "/dev:/dev", IMAGE, "bootupctl", "update"]  # fmt: skip
    assert "falling back to container-based update" in caplog.text
    assert "bootupctl: running update from container image" in caplog.text


def test_before_rhel_9_6_the_image_is_used_and_not_pulled_when_present(tmp_path: Path) -> None:
    tools = StandIn()
    tools.image_present = True
    assert update(node(tmp_path, RHCOS_94), tools)
    assert [c[0] for c in tools.calls] == ["mokutil", "podman", "systemd-run"]
    assert tools.calls[-1][-2:] == ["bootupctl", "update"]


@pytest.mark.parametrize(
    ("release", "arch", "secure_boot", "bootupctl"),
    [
        ('ID="debian"\nVERSION_ID=12\n', "x86_64", "SecureBoot enabled\n", True),
        (RHCOS_96, "ppc64le", "SecureBoot enabled\n", True),
        (RHCOS_96, "x86_64", "SecureBoot disabled\n", True),
        (RHCOS_96, "x86_64", "SecureBoot enabled\n", False),
    ],
)
def test_no_update_off_coreos_other_arches_without_secure_boot_or_bootupctl(
    tmp_path: Path, release: str, arch: str, secure_boot: str, bootupctl: bool
) -> None:
    tools = StandIn(secure_boot)
    assert not update(node(tmp_path, release, bootupctl), tools, arch)
    assert all(c[0] == "mokutil" for c in tools.calls)


def test_without_mokutil_secure_boot_is_assumed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    tools = StandIn(secure_boot=None)
    with caplog.at_level(logging.INFO):
        assert update(node(tmp_path), tools)
    assert "isSecureBootEnabled: mokutil failed, assuming Secure Boot may be enabled" in caplog.text


def test_a_failed_bootupctl_is_an_error_the_pivot_survives(tmp_path: Path) -> None:
    tools = StandIn()
    tools.service_fails = tools.bootupctl_fails = tools.image_present = True
    with pytest.raises(BootloaderUpdateFailed, match="bootupctl fallback EFI copy"):
        update(node(tmp_path), tools)


class Rpm:
    """Just what the OS step asks of rpm-ostree, in order."""

    def __init__(self, calls: list[str]) -> None:
        self.calls = calls

    def cleanup_pending(self) -> None:
        self.calls.append("cleanup")

    def rebase(self, image: str, *, even_if_booted: bool = False) -> bool:
        self.calls.append(f"rebase {image}")
        return True

    def switch_kernel(self, old: str, new: str) -> None:
        self.calls.append("kernel")

    def status(self) -> object:
        class Booted:
            requested_packages: tuple[str, ...] = ()

        class Status:
            booted = Booted()
            staged = None

        return Status()


def test_the_pivot_updates_the_boot_loader_first_and_goes_on_when_it_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:

    calls: list[str] = []

    def failing(root: Root, image: str, *_a: object, **_k: object) -> bool:
        calls.append(f"bootloader {image}")
        raise BootloaderUpdateFailed("pulling image for bootupctl: error running podman: boom")

    monkeypatch.setattr(bootupd, "run_bootloader_update", failing)
    plan = make_plan(mc("a", osImageURL="quay.io/os@sha256:" + "1" * 64), mc("b", osImageURL=IMAGE))
    with caplog.at_level(logging.WARNING):
        imagemode.apply_os(Rpm(calls), node(tmp_path), plan)  # type: ignore[arg-type]
    assert calls[:3] == ["cleanup", f"bootloader {IMAGE}", f"rebase {IMAGE}"]
    assert "bootloader update failed: pulling image for bootupctl" in caplog.text
