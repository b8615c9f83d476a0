"""The bad-input corpus (``tests/data/bad/``): malformed and hostile MachineConfigs.

Each file says, in its header, the exit code and the exact reason ``mcd once-from``
must give when the config is applied over ``tests/data/base-worker-1.yaml``. The
node's root holds two traps: ``/etc/escape``, a symlink leading out of the root to a
sibling ``outside`` directory, and ``/etc/loop``, a symlink to itself; and RHCOS's
``/var/run -> ../run``, ``/lib -> usr/lib`` and ``/bin -> usr/bin``. For every
file: the reason is exact, there is no traceback, nothing hangs, and not one byte,
mode, owner or timestamp changes, inside the root or beside it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import signal
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import pytest
from click.testing import CliRunner

from mcd.cli import cli
from mcd.host.lock import LOCK_PATH
from tests.e2e.harness import BIN, IMAGE_A, make_root
from tests.fakes import rpm_ostree

DATA = Path(__file__).resolve().parents[1] / "data"
CORPUS = sorted((DATA / "bad").glob("*.yaml"))
BASE = DATA / "base-worker-1.yaml"
SECONDS_PER_CASE = 30

Snapshot = dict[str, tuple[object, ...]]


def expectation(path: Path) -> tuple[int, str]:
    """The ``# exit:`` and ``# reason:`` header lines of a corpus file."""
    head = path.read_bytes()[:4096].decode("utf-8", errors="replace").splitlines()
    fields = dict(
        line[2:].split(": ", 1) for line in head if line.startswith(("# exit: ", "# reason: "))
    )
    return int(fields["exit"]), fields["reason"]


def snapshot(top: Path) -> Snapshot:
    """Every entry under ``top``: type, mode, owner, mtime, and content hash or link target.

    The writer lock's file is left out: a refusal taken under the lock records who held
    it there (``mcd.host.lock``), which is mcd's bookkeeping, not a change to the node.
    """
    found: Snapshot = {}
    for dirpath, dirnames, filenames in os.walk(top):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            if path.endswith(LOCK_PATH):
                continue
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                what: object = os.readlink(path)
            elif stat.S_ISREG(st.st_mode):
                what = hashlib.sha256(Path(path).read_bytes()).hexdigest()
            else:
                what = None
            found[os.path.relpath(path, top)] = (
                st.st_mode,
                st.st_uid,
                st.st_gid,
                st.st_mtime_ns,
                what,
            )
    return found


@contextlib.contextmanager
def deadline(seconds: int, what: str) -> Iterator[None]:
    def expired(_sig: int, _frame: FrameType | None) -> None:
        raise TimeoutError(f"{what} did not finish in {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def once_from(source: Path, root: Path, state: Path) -> tuple[int, str]:
    env = {
        "PATH": f"{BIN}:{os.environ['PATH']}",
        "MCD_FAKE_RPMOSTREE_STATE": str(state),
        "MCD_TEST_PYTHON": sys.executable,
    }
    result = CliRunner().invoke(
        cli, ["once-from", str(source), "--root", str(root), "--skip-reboot"], env=env
    )
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"{source.name}: crashed: {result.exception!r}"
    )
    return result.exit_code, result.stderr


def rhcos_links(root: Path) -> None:
    """Some of RHCOS's real top-level symlinks (``/var/run``, ``/lib``, ``/bin``)."""
    (root / "var").mkdir(exist_ok=True)
    (root / "var/run").symlink_to("../run")
    (root / "usr/lib").mkdir(parents=True, exist_ok=True)
    (root / "usr/bin").mkdir(parents=True, exist_ok=True)
    (root / "lib").symlink_to("usr/lib")
    (root / "bin").symlink_to("usr/bin")


@pytest.fixture(scope="module")
def base_node(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A node provisioned with the base config: its root and its rpm-ostree state."""
    top = tmp_path_factory.mktemp("base")
    root = top / "root"
    make_root(root)
    state = top / "rpm-ostree.json"
    rpm_ostree.save(state, rpm_ostree.new_state(IMAGE_A))
    code, stderr = once_from(BASE, root, state)
    assert code == 0, stderr
    return root, state


def test_the_corpus_is_large_and_every_file_states_its_reason() -> None:
    assert len(CORPUS) >= 60
    for path in CORPUS:
        code, reason = expectation(path)
        assert code in (1, 2) and reason and reason != "TODO", path.name


@pytest.mark.parametrize("source", CORPUS, ids=[p.stem for p in CORPUS])
def test_bad_config_is_refused_with_its_exact_reason_and_nothing_changes(
    source: Path, base_node: tuple[Path, Path], tmp_path: Path
) -> None:
    base_root, state = base_node
    root = tmp_path / "root"
    shutil.copytree(base_root, root, symlinks=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "sentinel").write_text("not the node's\n")
    (root / "etc/escape").symlink_to("../../outside")
    (root / "etc/loop").symlink_to("loop")
    rhcos_links(root)
    before = snapshot(tmp_path)

    with deadline(SECONDS_PER_CASE, source.name):
        code, stderr = once_from(source, root, state)

    want_code, want_reason = expectation(source)
    lines = [line for line in stderr.splitlines() if line.startswith("error: ")]
    assert lines == ["error: " + want_reason.replace("{root}", str(root))], stderr[-2000:]
    assert code == want_code
    assert "Traceback" not in stderr
    assert snapshot(tmp_path) == before, f"{source.name}: the node changed"


def test_a_document_over_64_mib_is_refused_unread(
    base_node: tuple[Path, Path], tmp_path: Path
) -> None:
    base_root, state = base_node
    root = tmp_path / "root"
    shutil.copytree(base_root, root, symlinks=True)
    huge = tmp_path / "huge.yaml"
    with huge.open("wb") as f:
        f.write(b"kind: MachineConfig\nspec: {config: {ignition: {version: 3.4.0}}}\n# ")
        f.truncate(65 << 20)
    before = snapshot(root)
    code, stderr = once_from(huge, root, state)
    assert code == 1
    assert stderr.strip().splitlines()[-1] == f"error: {huge}: larger than 64 MiB"
    assert snapshot(root) == before
