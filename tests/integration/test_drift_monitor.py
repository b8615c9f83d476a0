"""The config drift monitor on a temp root with real inotify (no cluster needed)."""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path

import pytest

from mcd.agent.report import drift
from mcd.agent.report.drift import DriftMonitor
from mcd.host.fs.inotify import PathWatcher
from mcd.host.rootfs import Root
from tests.builders import file_entry, mc
from tests.fakes.kubecluster import eventually


def test_watcher_sees_writes_renames_chmods_and_removals_of_tracked_paths_only(
    tmp_path: Path,
) -> None:
    (tmp_path / "etc/app").mkdir(parents=True)
    (tmp_path / "etc/app/a").write_text("1")
    watcher = PathWatcher(Root(tmp_path), ["/etc/app/a", "/etc/app/b", "/etc/missing/c"])
    try:
        assert watcher.directories == ["/etc/app"]
        (tmp_path / "etc/app/other").write_text("x")
        assert watcher.read(100) == set()
        (tmp_path / "etc/app/a").write_text("2")
        assert watcher.read(1000) == {"/etc/app/a"}
        (tmp_path / "etc/app/.b.tmp").write_text("new")
        os.rename(tmp_path / "etc/app/.b.tmp", tmp_path / "etc/app/b")
        assert "/etc/app/b" in watcher.read(1000)
        (tmp_path / "etc/app/a").chmod(0o600)
        assert watcher.read(1000) == {"/etc/app/a"}
        (tmp_path / "etc/app/a").unlink()
        assert watcher.read(1000) == {"/etc/app/a"}
    finally:
        watcher.close()


def test_interrupt_wakes_a_waiting_read(tmp_path: Path) -> None:
    watcher = PathWatcher(Root(tmp_path), ["/x"])
    threading.Timer(0.05, watcher.interrupt).start()
    assert watcher.read(10_000) == set()
    watcher.close()


def test_monitor_reports_each_new_reason_once_and_the_return_to_clean(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    config = mc(
        "rendered-1", files=[file_entry("/etc/a.conf", "good\n"), file_entry("/etc/b.conf", "b\n")]
    )
    for name, data in (("a.conf", "good\n"), ("b.conf", "b\n")):
        (tmp_path / "etc" / name).write_text(data)
        (tmp_path / "etc" / name).chmod(0o644)
    drifts: list[str] = []
    clears: list[bool] = []
    forced: list[bool] = []
    monitor = DriftMonitor(
        Root(tmp_path),
        None,
        drifts.append,
        lambda: clears.append(True),
        lambda: forced.append(True),
    )
    monitor.start(config)
    try:
        os.utime(tmp_path / "etc/a.conf")  # a touch is not drift
        (tmp_path / "etc/a.conf").write_text("bad\n")
        assert eventually(lambda: len(drifts) == 1, 3)
        assert (
            drifts[0]
            == 'unexpected on-disk state validating against rendered-1: content mismatch for file "/etc/a.conf"'
        )
        (tmp_path / "etc/a.conf").write_text("bad again\n")  # same reason: not reported twice
        (tmp_path / "etc/a.conf").write_text("good\n")
        assert eventually(lambda: clears == [True], 3)
        assert len(drifts) == 1
        (tmp_path / "run").mkdir()
        monitor.start(config)  # restart picks up /run, which now exists
        (tmp_path / "run/machine-config-daemon-force").write_text("")
        assert eventually(lambda: forced == [True], 3)
    finally:
        assert monitor.stop()
    assert not monitor.running
    (tmp_path / "etc/b.conf").write_text("changed while stopped\n")
    assert not eventually(lambda: len(drifts) > 1, 0.5)


def test_a_node_out_of_inotify_instances_keeps_its_agent_and_says_so_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """``inotify_init1`` fails with EMFILE once ``fs.inotify.max_user_instances`` (128 by
    default, shared by every container of the host) is used up: the monitor does not start,
    says why in one line, and a later start (the next sync) watches again."""
    (tmp_path / "etc").mkdir()
    config = mc("rendered-1", files=[file_entry("/etc/a.conf", "good\n")])
    (tmp_path / "etc/a.conf").write_text("good\n")
    monitor = DriftMonitor(Root(tmp_path), None, lambda _: None, lambda: None)

    def refused(*_: object) -> None:
        raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))

    with monkeypatch.context() as patched:
        patched.setattr(drift, "PathWatcher", refused)
        assert monitor.start(config) is False
    assert not monitor.running
    (line,) = [r.getMessage() for r in caplog.records if "Drift Monitor" in r.getMessage()]
    assert line.startswith("Config Drift Monitor could not start: Too many open files")
    assert "Traceback" not in caplog.text
    assert monitor.start(config) is True  # room again: watching
    try:
        assert monitor.running
    finally:
        monitor.stop()
