"""The booted image is asked of rpm-ostree once per boot: only a reboot changes it (upstream
reads ``bootedOSImageURL`` once at start), and every update checks the OS image before Done."""

from __future__ import annotations

import logging
import os
import sys
import uuid
from pathlib import Path

import pytest

from mcd.host.osupdate.rpmostree import RpmOstree
from mcd.host.rootfs import Root
from mcd.host.runner import Runner
from tests.fakes import rpm_ostree

BIN = Path(__file__).resolve().parents[1] / "fakes" / "bin"
IMAGE_A = "quay.io/openshift/os@sha256:aaaa"
IMAGE_B = "quay.io/openshift/os@sha256:bbbb"


def booted_on_a(
    tmp_path: Path, root: Path, caplog: pytest.LogCaptureFixture
) -> tuple[Path, RpmOstree]:
    """The stand-in's state (booted on IMAGE_A) and an RpmOstree of ``root`` that runs it;
    the runner's lines are captured."""
    state = tmp_path / "rpm-ostree.json"
    rpm_ostree.save(state, rpm_ostree.new_state(IMAGE_A))
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}",
           "MCD_FAKE_RPMOSTREE_STATE": str(state), "MCD_TEST_PYTHON": sys.executable}  # fmt: skip
    caplog.set_level(logging.INFO, logger="mcd.host.runner")
    return state, RpmOstree(Root(str(root)), Runner(env=env))


def test_booted_image_is_read_once_per_boot(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "root"
    (root / "proc/sys/kernel/random").mkdir(parents=True)
    boot_id = root / "proc/sys/kernel/random/boot_id"
    boot_id.write_text(str(uuid.uuid4()))
    state, rpm = booted_on_a(tmp_path, root, caplog)

    assert rpm.booted_image() == IMAGE_A
    assert rpm.booted_image() == IMAGE_A
    assert caplog.text.count("Running: rpm-ostree status --json") == 1

    assert rpm.rebase(IMAGE_B)  # staged: the booted image is still A until the reboot
    assert rpm.booted_image() == IMAGE_A
    assert rpm_ostree.boot_staged(state)
    boot_id.write_text(str(uuid.uuid4()))  # the reboot
    assert rpm.booted_image() == IMAGE_B
    assert caplog.text.count("Running: rpm-ostree status --json") == 2


def test_without_a_boot_id_every_call_asks(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    _state, rpm = booted_on_a(tmp_path, root, caplog)
    assert rpm.booted_image() == rpm.booted_image() == IMAGE_A
    assert caplog.text.count("Running: rpm-ostree status --json") == 2
