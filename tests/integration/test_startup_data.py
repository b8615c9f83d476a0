"""What the agent logs about the node at start, and mcd_local_unsupported_packages (issue 32;
upstream ``LogSystemData``, ``getUnsupportedPackages``), with the rpm-ostree stand-in."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

import pytest

from mcd.agent.report.metrics import Metrics
from mcd.agent.report.previouslogs import PREVIOUS, preserve
from mcd.agent.report.startup import (
    FINALIZE_FAILURE,
    finalize_failure_annotation,
    log_system_data,
    unsupported_packages,
)
from mcd.host.rootfs import Root
from mcd.host.runner import Runner
from tests.fakes import rpm_ostree

BIN = Path(__file__).resolve().parents[1] / "fakes" / "bin"


def test_unsupported_packages_are_the_layered_ones_no_extension_has() -> None:
    status = {"deployments": [
        {"booted": False, "requested-packages": ["vim"]},
        {"booted": True, "requested-packages": ["usbguard", "htop"],
         "requested-local-packages": ["my.rpm"], "requested-base-removals": ["kernel-devel"]},
    ]}  # fmt: skip
    assert unsupported_packages(status) == ["htop", "my.rpm"]
    assert unsupported_packages({"deployments": []}) is None


def test_start_logs_rpm_ostree_status_and_counts_unsupported_packages(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "root"
    (root / "run").mkdir(parents=True)
    (root / "run/ostree-booted").touch()
    state = tmp_path / "rpm.json"
    s = rpm_ostree.new_state()
    s["deployments"][0]["requested-packages"] = ["htop", "sysstat", "strace"]
    rpm_ostree.save(state, s)
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}",
           "MCD_FAKE_RPMOSTREE_STATE": str(state), "MCD_TEST_PYTHON": sys.executable}  # fmt: skip
    metrics = Metrics()
    with caplog.at_level(logging.INFO, logger="mcd.agent.report.startup"):
        log_system_data(Root(root), metrics, "node-1", Runner(env=env))
    text = caplog.text
    assert "Found 3 requested local packages in the booted deployment" in text
    assert "Unsupported package htop" in text and "Unsupported package strace" in text
    assert "Unsupported package sysstat" not in text
    value = metrics.registry.get_sample_value("mcd_local_unsupported_packages", {"node": "node-1"})
    assert value == 2
    assert "journalctl --list-boots:" in text or "Listing boots:" in text
    assert (
        "systemd service state: OK" in text
        or "Listing failed systemd services" in text
        or "systemctl --failed:" in text
    )


def _journal(tmp_path: Path, output: str) -> Runner:
    """A runner whose ``journalctl`` prints ``output`` (the previous boot's finalization)."""
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    script = bindir / "journalctl"
    script.write_text(f"#!/bin/sh\ncat <<'END'\n{output}END\n")
    script.chmod(0o755)
    return Runner(env={**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}"})


def test_finalize_failure_is_proxied_to_the_annotation_and_cleared(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "run").mkdir(parents=True)
    (root / "run/ostree-booted").touch()
    failed = _journal(tmp_path, "Finalizing staged deployment\nerror: Installing kernel: No space left on device\n")  # fmt: skip
    assert finalize_failure_annotation(Root(root), {}, failed) == {
        FINALIZE_FAILURE: "error: Installing kernel: No space left on device"
    }
    done = {FINALIZE_FAILURE: "error: Installing kernel: No space left on device"}
    assert finalize_failure_annotation(Root(root), done, failed) == {}  # already said
    fine = _journal(tmp_path, "Finalizing staged deployment\nBootloader updated\n")
    assert finalize_failure_annotation(Root(root), done, fine) == {FINALIZE_FAILURE: ""}
    assert finalize_failure_annotation(Root(root), {}, fine) == {}
    (root / "run/ostree-booted").unlink()
    assert finalize_failure_annotation(Root(root), {}, failed) == {}  # not an ostree system


def test_previous_daemon_logs_are_kept_in_place_of_the_last_copy(tmp_path: Path) -> None:
    root = tmp_path / "root"
    pod = root / "var/log/pods/mcd_mcd-abcde_0f1e2d/mcd"
    pod.mkdir(parents=True)
    (pod / "0.log").write_text("agent log line\n")
    (root / "var/log/pods/mcd_other-pod_1234").mkdir()
    stale = root / PREVIOUS.lstrip("/") / "mcd_mcd-old_9999"
    stale.mkdir(parents=True)
    assert preserve(Root(root), "mcd", "mcd-abcde")
    kept = root / PREVIOUS.lstrip("/")
    assert sorted(p.name for p in kept.iterdir()) == ["mcd_mcd-abcde_0f1e2d"]
    assert (kept / "mcd_mcd-abcde_0f1e2d/mcd/0.log").read_text() == "agent log line\n"
    assert not preserve(Root(root), "mcd", "gone")
