"""The undo record keeps each file an update overwrites as a hard link to it where it can
(issue 46: a copy and two fsyncs per file made a 100-file update 2.4x slower), and as a copy
where it cannot (another filesystem, a link refused). Either way, a rollback puts the file
back exactly as it was: linked back, the very inode the node had (issue 46: a copy and two
fsyncs per file made a rollback 2.3x the update it undoes), or copied back where the preimage
is a copy; and the record's end leaves nothing behind."""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path

import pytest

from mcd.host.fs import fsops
from mcd.host.ondisk import undo
from mcd.host.rootfs import Root

PATH = "/etc/app/a.conf"


def _root(tmp_path: Path) -> tuple[Root, Path]:
    target = tmp_path / "etc/app/a.conf"
    target.parent.mkdir(parents=True)
    target.write_bytes(b"a=1\n")
    os.chmod(target, 0o640)
    os.utime(target, ns=(1_000_000_000, 2_000_000_000))
    return Root(str(tmp_path)), target


def _preimage(tmp_path: Path) -> Path:
    return tmp_path / (undo.PREIMAGES + PATH).lstrip("/")


def _rewrite_and_roll_back(root: Root, target: Path) -> os.stat_result:
    """The update's own kind of write (a new file renamed over the name), then the rollback."""
    fsops.write_file(root, PATH, b"a=2\n", 0o600)
    assert target.read_bytes() == b"a=2\n"
    undo.restore(root)
    return target.stat()


def test_a_file_on_the_state_directorys_filesystem_is_kept_as_a_hard_link(
    tmp_path: Path,
) -> None:
    root, target = _root(tmp_path)
    before = target.stat()
    undo.record(root, [PATH])
    kept = _preimage(tmp_path).stat()
    assert (kept.st_ino, kept.st_dev) == (before.st_ino, before.st_dev)  # no copy was made

    after = _rewrite_and_roll_back(root, target)
    assert target.read_bytes() == b"a=1\n"
    assert (after.st_mode & 0o7777, after.st_mtime_ns) == (0o640, 2_000_000_000)
    assert (after.st_ino, after.st_dev) == (before.st_ino, before.st_dev)  # the node's own file
    undo.discard(root)  # a one-shot command's: the preimages gone before it returns
    assert not (tmp_path / undo.RECORD.lstrip("/")).exists()
    state = (tmp_path / undo.PREIMAGES.lstrip("/")).parent
    assert sorted(p.name for p in state.iterdir()) == []


def test_in_the_agent_preimages_go_in_the_background(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(undo, "_background", threading.Event())
    undo.sweep_in_background()
    root, _ = _root(tmp_path)
    undo.record(root, [PATH])
    fsops.write_file(root, PATH, b"a=2\n", 0o600)
    undo.discard(root)
    assert not (tmp_path / undo.RECORD.lstrip("/")).exists()  # at once: no rollback reads it
    assert not (tmp_path / undo.PREIMAGES.lstrip("/")).exists()  # put aside at once
    undo.settle()
    state = (tmp_path / undo.PREIMAGES.lstrip("/")).parent  # the state directory
    assert sorted(p.name for p in state.iterdir()) == []  # the preimages put aside are gone


def test_preimages_a_killed_process_put_aside_go_with_the_next_record(tmp_path: Path) -> None:
    root, _ = _root(tmp_path)
    undo.record(root, [PATH])
    preimages = tmp_path / undo.PREIMAGES.lstrip("/")
    left = preimages.with_name(preimages.name + ".discarded.999.0")
    preimages.rename(left)  # as discard does, before its thread ran: then the process died
    undo.record(root, [PATH])
    assert not left.exists() and _preimage(tmp_path).read_bytes() == b"a=1\n"


@pytest.mark.parametrize("refusal", [errno.EXDEV, errno.EPERM])
def test_where_a_link_is_refused_the_file_is_copied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, refusal: int
) -> None:
    root, target = _root(tmp_path)

    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError(refusal, os.strerror(refusal))

    monkeypatch.setattr(os, "link", refuse)
    undo.record(root, [PATH])
    kept = _preimage(tmp_path).stat()
    assert kept.st_ino != target.stat().st_ino
    assert _preimage(tmp_path).read_bytes() == b"a=1\n"

    after = _rewrite_and_roll_back(root, target)
    assert target.read_bytes() == b"a=1\n"
    assert (after.st_mode & 0o7777, after.st_mtime_ns) == (0o640, 2_000_000_000)


def test_a_stale_preimage_from_an_unfinished_record_is_replaced(tmp_path: Path) -> None:
    root, target = _root(tmp_path)
    stale = _preimage(tmp_path)
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"from a record that never finished\n")
    undo.record(root, [PATH])
    _rewrite_and_roll_back(root, target)
    assert target.read_bytes() == b"a=1\n"


def test_a_file_with_a_second_name_shares_its_inode_with_it_again(tmp_path: Path) -> None:
    """A copy would split the two names; the link back keeps them one file, as before."""
    root, target = _root(tmp_path)
    other = tmp_path / "etc/app/b.conf"
    os.link(target, other)
    undo.record(root, [PATH])
    _rewrite_and_roll_back(root, target)
    assert target.read_bytes() == b"a=1\n"
    assert target.stat().st_ino == other.stat().st_ino
    undo.discard(root)
    assert target.stat().st_nlink == 2  # the preimage's name is gone, the node's two stay


def test_the_files_step_puts_back_what_the_record_kept_and_the_end_leaves_it(
    tmp_path: Path,
) -> None:
    """A rollback's files step links back each file the record kept (the actions then run
    again on the files that stay); a path that was absent is the caller's to write, and the
    rollback's end removes it again; the file put back is left as it is."""
    root, target = _root(tmp_path)
    before = target.stat()
    new = "/etc/app/new.conf"
    undo.record(root, [PATH, new])
    fsops.write_file(root, PATH, b"a=2\n", 0o600)
    fsops.write_file(root, new, b"n=1\n")
    assert undo.put_back_files(root, [PATH, new]) == {PATH}
    assert target.read_bytes() == b"a=1\n" and target.stat().st_ino == before.st_ino
    assert (tmp_path / new.lstrip("/")).exists()  # not recorded as a file: not its step's
    undo.restore(root)
    after = target.stat()
    assert (after.st_ino, after.st_mtime_ns, after.st_mode & 0o7777) == (
        before.st_ino, 2_000_000_000, 0o640)  # fmt: skip
    assert not (tmp_path / new.lstrip("/")).exists()


def test_without_a_record_the_files_step_puts_back_nothing(tmp_path: Path) -> None:
    root, _ = _root(tmp_path)
    assert undo.put_back_files(root, [PATH]) == set()
