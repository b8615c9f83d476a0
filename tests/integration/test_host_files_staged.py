"""A batch of files is staged before any target changes (issue 46): each file's new bytes
are decoded, written to a temp file beside it and fsynced one file at a time (the batch's
bytes are never all held at once), then renamed over the targets. A bad entry or a failed
write anywhere leaves no temp file and no directory the batch made; a rollback removes the
temps a killed writer left."""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcd.host.effects import HostEffects
from mcd.host.errors import HostError
from mcd.host.fs import fsops
from mcd.host.ondisk import undo
from mcd.host.rootfs import Root
from mcd.host.runner import Runner
from mcd.host.systemd.offline import OfflineSystemd
from mcd.model.ignition.config import Contents, File
from mcd.model.ignition.dataurl import encode_data_url
from tests.integration.helpers.tree import differences, snapshot


def effects(root: Path) -> HostEffects:
    r = Root(root)
    return HostEffects(r, OfflineSystemd(r, Runner()))


def a_file(path: str, data: bytes, mode: int = 0o644) -> File:
    return File(path, Contents(source=encode_data_url(data)), mode=mode)


def batch(root: Path) -> list[File]:
    (root / "etc/keep.conf").write_bytes(b"old\n")
    return [
        a_file("/etc/keep.conf", b"new\n"),
        a_file("/etc/made/deep/one.conf", b"one\n", 0o600),
        a_file("/etc/made/two.conf", b"two\n"),
    ]


def temps(root: Path) -> list[str]:
    return sorted(str(p) for p in root.rglob("*.mcd-tmp"))


def test_a_bad_entry_last_in_the_batch_leaves_the_root_as_it_was(node_root: Path) -> None:
    files = batch(node_root)
    before = snapshot(node_root)
    bad = File("/etc/made/bad.conf", Contents(source="data:;base64,not base64"))
    with pytest.raises(HostError, match="invalid data character"):
        effects(node_root).write_files([*files, bad])
    assert differences(before, snapshot(node_root)) == []


def test_a_write_failing_midway_leaves_no_temp_and_no_empty_directory(node_root: Path) -> None:
    files = batch(node_root)

    def full(count: int) -> None:
        if count == 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with pytest.raises(HostError, match="failed to write file"):
        effects(node_root).write_files(files, on_written=full)
    assert (node_root / "etc/keep.conf").read_bytes() == b"new\n"  # renamed before the failure
    assert (node_root / "etc/made/deep/one.conf").read_bytes() == b"one\n"
    assert not (node_root / "etc/made/two.conf").exists()
    assert temps(node_root) == []


def test_a_whole_batch_lands_with_modes_and_no_temp(node_root: Path) -> None:
    files = batch(node_root)
    assert effects(node_root).write_files([*files, a_file("/etc/keep.conf", b"last\n")]) == 4
    assert (node_root / "etc/keep.conf").read_bytes() == b"last\n"  # a path named twice
    one = node_root / "etc/made/deep/one.conf"
    assert (one.read_bytes(), one.stat().st_mode & 0o7777) == (b"one\n", 0o600)
    assert temps(node_root) == []


def test_a_symlink_the_batch_replaces_is_not_written_through_by_a_later_file(
    node_root: Path,
) -> None:
    (node_root / "etc/real").mkdir()
    (node_root / "etc/link").symlink_to("real")
    files = [a_file("/etc/link", b"now a file\n"), a_file("/etc/link/x.conf", b"x\n")]
    with pytest.raises(HostError, match=r"x\.conf\": Not a directory"):
        effects(node_root).write_files(files)  # as one file at a time: its parent is a file now
    assert (node_root / "etc/link").read_bytes() == b"now a file\n"
    assert list((node_root / "etc/real").iterdir()) == []
    assert temps(node_root) == []


def test_a_rollback_removes_the_temps_a_killed_writer_staged(node_root: Path) -> None:
    (node_root / "etc/keep.conf").write_bytes(b"old\n")
    (node_root / "etc/machine-config-daemon").mkdir()  # the agent's state directory
    root = Root(node_root)
    before = snapshot(node_root)
    undo.record(root, ["/etc/keep.conf", "/etc/made/one.conf"])
    for path in ("/etc/keep.conf", "/etc/made/one.conf"):  # staged, then killed: no rename
        fsops.stage_file(root, path, b"new\n")
    assert len(temps(node_root)) == 2
    undo.restore(root)
    undo.discard(root)
    assert differences(before, snapshot(node_root)) == []


_NAMES = st.sampled_from(["a", "b", "c"])
_PATHS = st.lists(_NAMES, min_size=1, max_size=3).map(lambda p: "/etc/" + "/".join(p))
_LINKS = st.lists(
    st.tuples(_PATHS, st.sampled_from(["/etc/a", "/etc/b/c", "../..", "/elsewhere", "c"])),
    max_size=4,
)


def _tree(top: Path) -> dict[str, str]:
    found = {}
    for here, dirs, names in os.walk(top):
        for name in dirs + names:
            p = Path(here) / name
            if p.is_symlink():
                found[str(p.relative_to(top))] = f"-> {os.readlink(p)}"
            else:
                found[str(p.relative_to(top))] = "dir" if p.is_dir() else p.read_text()
    return found


@given(links=_LINKS, paths=st.lists(_PATHS, min_size=1, max_size=6))
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_a_staged_batch_ends_as_its_files_written_one_at_a_time(
    tmp_path: Path, links: list[tuple[str, str]], paths: list[str]
) -> None:
    """Whatever symlinks (looping, climbing out, replacing directories) are on the paths: a
    batch that succeeds leaves what writing its files one batch each leaves, and a batch
    fails where one of those writes fails; a failed batch leaves no temp file."""
    results = []
    for staged in (False, True):
        top = tmp_path / f"staged-{staged}-{len(list(tmp_path.iterdir()))}"
        (top / "etc").mkdir(parents=True)
        (top / "elsewhere").mkdir()
        root = Root(top)
        for path, target in links:
            with contextlib.suppress(OSError, HostError):
                fsops.write_symlink(root, path, target)
        files = [a_file(p, f"{i} {p}".encode()) for i, p in enumerate(paths)]
        fx = HostEffects(root, OfflineSystemd(root, Runner()))
        try:
            if staged:
                fx.write_files(files)
            else:
                for file in files:
                    fx.write_files([file])
            failed = False
        except (OSError, HostError):
            failed = True
        assert temps(top) == []
        results.append((failed, None if failed else _tree(top)))
    assert results[0] == results[1]
