"""One writer at a time (issue 14, item 5): the node's writer lock, and what commands say.

A second writer (another process, or another thread) is refused at once with one line
naming the holder, or waits and then goes ahead; the lock dies with its holder; no
command calls a config applied that is not the current one, and finishing someone
else's interrupted update is reported as that.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcd.agent.update.journal import JOURNAL
from mcd.cli import cli
from mcd.host.lock import LOCK_PATH, LockBusy, holder_of, writer_lock
from mcd.host.rootfs import Root
from mcd.model.vocabulary import CURRENT_CONFIG_PATH
from tests.builders import file_entry, mc_doc
from tests.e2e.harness import BIN, make_root

HOLD = textwrap.dedent(
    """
    import sys, time
    from mcd.host.lock import writer_lock
    from mcd.host.rootfs import Root
    with writer_lock(Root(sys.argv[1]), "test holder: " + sys.argv[2]):
        print("held", flush=True)
        time.sleep(float(sys.argv[3]))
        print("releasing", flush=True)
    """
)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    top = tmp_path / "root"
    make_root(top)
    return top


def hold(root: Path, who: str, seconds: float) -> subprocess.Popen[str]:
    """Another process holding the lock; returns once it holds it."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(root), who, str(seconds)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "held"
    return proc


@pytest.fixture
def holder(root: Path) -> Iterator[subprocess.Popen[str]]:
    proc = hold(root, "someone else", 120)
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


def write_config(tmp_path: Path, name: str, data: str) -> Path:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(mc_doc(name, files=[file_entry("/etc/app.conf", data)])))
    return path


def run(*args: str) -> tuple[int, str, str]:
    env = {"PATH": f"{BIN}:{os.environ['PATH']}", "MCD_TEST_PYTHON": sys.executable}
    result = CliRunner().invoke(cli, list(args), env=env)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) <= 1, result.stderr
    return result.exit_code, result.stdout, "".join(errors)


def test_a_second_writer_is_refused_with_one_line_naming_the_holder(
    root: Path, holder: subprocess.Popen[str], tmp_path: Path
) -> None:
    source = write_config(tmp_path, "rendered-worker-1", "a\n")
    code, _, stderr = run("once-from", str(source), "--root", str(root), "--skip-reboot")
    assert code == 1
    line = stderr.strip()
    assert line.startswith(f"error: another writer holds the node: pid {holder.pid} ")
    assert "(test holder: someone else)" in line
    assert line.endswith(f"try again when it has finished (lock {LOCK_PATH})")
    assert "\n" not in line
    assert not (root / "etc/app.conf").exists()
    assert not (root / CURRENT_CONFIG_PATH.lstrip("/")).exists()


def test_restore_and_pivot_are_refused_too(
    root: Path, holder: subprocess.Popen[str], tmp_path: Path
) -> None:
    source = write_config(tmp_path, "rendered-worker-1", "a\n")
    code, _, stderr = run("restore", "--root", str(root), "--config", str(source))
    assert code == 1
    assert stderr.startswith(f"error: another writer holds the node: pid {holder.pid} ")
    code, _, stderr = run("pivot", "quay.io/x@sha256:bb", "--root", str(root))
    assert code == 1
    assert stderr.startswith(f"error: another writer holds the node: pid {holder.pid} ")


def test_a_waiting_writer_goes_ahead_when_the_holder_finishes(root: Path) -> None:
    proc = hold(root, "short", 0.5)
    try:
        with writer_lock(Root(root), "waiter", wait=30) as held:
            assert held.path == LOCK_PATH
            assert proc.stdout is not None  # it only got the lock once the holder let go
            assert proc.stdout.readline().strip() == "releasing"
            assert "(waiter)" in holder_of(Root(root))
            assert f"pid {os.getpid()} " in holder_of(Root(root))
    finally:
        proc.kill()
        proc.wait()


def test_the_lock_dies_with_its_holder(root: Path) -> None:
    proc = hold(root, "killed", 120)
    with pytest.raises(LockBusy), writer_lock(Root(root), "me"):
        pass
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    with writer_lock(Root(root), "me"):
        pass


def test_the_lock_is_reentrant_in_a_thread_and_exclusive_between_threads(root: Path) -> None:
    node = Root(root)
    refused: list[str] = []

    def other() -> None:
        try:
            with writer_lock(node, "other thread"):
                pass
        except LockBusy as e:
            refused.append(str(e))

    with writer_lock(node, "outer"), writer_lock(node, "inner"):
        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
    assert refused and "another writer holds the node" in refused[0]
    with writer_lock(node, "after"):  # released once the outer block ended
        pass


def test_the_lock_file_is_private_and_never_written_through_a_symlink(
    root: Path, tmp_path: Path
) -> None:
    with writer_lock(Root(root), "me"):
        pass
    lock = root / LOCK_PATH.lstrip("/")
    assert stat.S_IMODE(lock.stat().st_mode) == 0o600
    lock.unlink()
    target = tmp_path / "victim"
    target.write_text("untouched\n")
    lock.symlink_to(target)
    with pytest.raises(Exception, match="a symlink is in the way"), writer_lock(Root(root), "me"):
        pass
    assert target.read_text() == "untouched\n"


def test_the_lock_follows_var_run_inside_the_root(root: Path) -> None:
    (root / "var").mkdir()
    (root / "var/run").symlink_to("../run")
    proc = hold(root, "via /run", 120)
    try:
        # the same file whether the node names it /run or /var/run: one lock
        assert holder_of(Root(root)).startswith(f"pid {proc.pid} ")
        with pytest.raises(LockBusy), writer_lock(Root(root), "me", wait=0.3):
            pass
    finally:
        proc.kill()
        proc.wait()


def test_finishing_an_interrupted_update_is_reported_as_that(root: Path, tmp_path: Path) -> None:
    first = write_config(tmp_path, "rendered-worker-1", "one\n")
    code, out, err = run("once-from", str(first), "--root", str(root), "--skip-reboot")
    assert code == 0, err
    applied = f"reboot-pending: rendered-worker-1 applied to {root}; a reboot completes it"
    assert out.splitlines()[-1] == applied  # legacy table: a file change reboots
    # an update to worker-2 that was killed after the journal was written
    second = write_config(tmp_path, "rendered-worker-2", "two\n")
    state = root / "etc/machine-config-daemon"
    (state / "transaction-old.json").write_bytes((state / "currentconfig").read_bytes())
    (state / "transaction-new.json").write_bytes(second.read_bytes())
    entry = {"old": "rendered-worker-1", "new": "rendered-worker-2", "phase": "applying"}
    (root / JOURNAL.lstrip("/")).write_text(json.dumps(entry))
    # the user now asks for worker-1 again: mcd finishes worker-2 first, then says so
    code, out, err = run("once-from", str(first), "--root", str(root), "--skip-reboot")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == (
        "finished an interrupted update rendered-worker-1 -> rendered-worker-2: done"
    )
    assert lines[1] == applied
    assert (root / "etc/app.conf").read_text() == "one\n"


def test_two_writers_at_once_never_interleave(root: Path, tmp_path: Path) -> None:
    """Two ``mcd once-from`` started together: each is applied whole or refused with the
    lock's line, and the node ends exactly on one of them."""
    a = write_config(tmp_path, "rendered-worker-a", "a\n" * 20000)
    b = write_config(tmp_path, "rendered-worker-b", "b\n" * 20000)
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", "MCD_TEST_PYTHON": sys.executable}

    def start(src: Path) -> subprocess.Popen[str]:
        argv = [sys.executable, "-m", "mcd", "once-from", str(src), "--root", str(root)]
        return subprocess.Popen(
            [*argv, "--skip-reboot"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip

    procs = [start(a), start(b)]
    outputs = [p.communicate(timeout=120) for p in procs]
    results = [(p.returncode, out, err) for p, (out, err) in zip(procs, outputs, strict=True)]
    applied = []
    for (code, out, err), name in zip(
        results, ("rendered-worker-a", "rendered-worker-b"), strict=True
    ):
        assert "Traceback" not in err
        if code == 0:
            assert f"{name} applied to {root}" in out
            applied.append(name)
        else:
            errors = [line for line in err.splitlines() if line.startswith("error: ")]
            assert len(errors) == 1 and "another writer holds the node: pid " in errors[0]
    assert applied
    current = json.loads((root / CURRENT_CONFIG_PATH.lstrip("/")).read_text())["metadata"]["name"]
    assert current in applied
    letter = current[-1]
    assert (root / "etc/app.conf").read_text() == f"{letter}\n" * 20000
    assert not (root / JOURNAL.lstrip("/")).exists()
