"""Files on a temp root: bytes, modes, owners, backups, removal, path safety (issue 3)."""

from __future__ import annotations

import logging
import os
import stat
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcd.host.effects import HostEffects
from mcd.host.errors import HostError, PathEscapeError
from mcd.host.fs import fsops
from mcd.host.ondisk import targets
from mcd.host.rootfs import Root
from mcd.host.runner import Runner
from mcd.host.systemd.offline import OfflineSystemd
from mcd.model.ignition.dataurl import encode_data_url
from tests.builders import file_entry, mc

SECRET = b"pull-secret-TOKEN-0123456789\n"


def effects(root: Path) -> HostEffects:
    r = Root(root)
    return HostEffects(r, OfflineSystemd(r, Runner()))


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_files_land_with_bytes_mode_and_owner(node_root: Path) -> None:
    cfg = mc(
        files=[
            file_entry("/etc/plain.conf", "plain\n", mode=None),
            file_entry("/etc/secret/pull.json", SECRET, mode=0o600),
            file_entry("/usr/local/bin/tool", "#!/bin/sh\n", mode=0o755),
            file_entry("/etc/by-name", "x", user={"name": "core"}, group={"name": "wheel"}),
            file_entry("/etc/by-id", "y", user={"id": 1001}, group={"id": 1000}),
            {"path": "/etc/zipped", "mode": 0o640,
             "contents": {"source": encode_data_url(b"inflated\n" * 100, compress=True),
                          "compression": "gzip"}},
        ],
    )  # fmt: skip
    written = effects(node_root).write_files(cfg.ignition.files)
    assert written == 6
    assert (node_root / "etc/plain.conf").read_bytes() == b"plain\n"
    assert mode_of(node_root / "etc/plain.conf") == 0o644  # default mode
    assert (node_root / "etc/secret/pull.json").read_bytes() == SECRET
    assert mode_of(node_root / "etc/secret/pull.json") == 0o600
    assert mode_of(node_root / "etc/secret") == 0o755  # parents created 0755
    assert mode_of(node_root / "usr/local/bin/tool") == 0o755
    assert (node_root / "etc/zipped").read_bytes() == b"inflated\n" * 100
    st = (node_root / "etc/by-name").stat()
    assert (st.st_uid, st.st_gid) == (1000, 10)  # names from the root's passwd/group
    st = (node_root / "etc/by-id").stat()
    assert (st.st_uid, st.st_gid) == (1001, 1000)
    st = (node_root / "etc/plain.conf").stat()
    assert (st.st_uid, st.st_gid) == (0, 0)
    assert not list((node_root / "etc").rglob("*.mcd-tmp"))


def test_parent_dirs_get_0755_whatever_the_umask(node_root: Path) -> None:
    old = os.umask(0o077)
    try:
        effects(node_root).write_files(mc(files=[file_entry("/etc/a/b/c", "x")]).ignition.files)
    finally:
        os.umask(old)
    assert mode_of(node_root / "etc/a") == 0o755
    assert mode_of(node_root / "etc/a/b") == 0o755


def test_unknown_owner_name_fails_before_anything_is_written(node_root: Path) -> None:
    cfg = mc(
        files=[
            file_entry("/etc/first", "1"),
            file_entry("/etc/second", "2", user={"name": "nobody-here"}),
        ]
    )
    with pytest.raises(HostError, match="failed to retrieve UserID for username: nobody-here"):
        effects(node_root).write_files(cfg.ignition.files)
    assert not (node_root / "etc/first").exists()


def test_agent_accounts_are_never_used(node_root: Path) -> None:
    # "daemon" exists on this machine but not in the root's /etc/passwd
    cfg = mc(files=[file_entry("/etc/x", "1", group={"name": "daemon"})])
    with pytest.raises(HostError, match="failed to retrieve GroupID for group: daemon"):
        effects(node_root).write_files(cfg.ignition.files)


def test_append_is_refused_with_the_upstream_text(node_root: Path) -> None:
    cfg = mc(files=[file_entry("/etc/x", "1", append=[{"source": encode_data_url(b"more")}])])
    with pytest.raises(
        HostError, match=r"found an append section when writing files\. Append is not supported"
    ):
        effects(node_root).write_files(cfg.ignition.files)
    assert not (node_root / "etc/x").exists()


def test_symlinked_parent_leading_out_of_the_root_is_refused(
    tmp_path: Path, node_root: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    depth = len(node_root.relative_to("/").parts)
    (node_root / "etc/evil").symlink_to("../" * (depth + 1) + str(outside).lstrip("/"))
    cfg = mc(files=[file_entry("/etc/evil/passwd", "owned\n")])
    with pytest.raises(PathEscapeError, match="refusing to write /etc/evil/passwd"):
        effects(node_root).write_files(cfg.ignition.files)
    assert list(outside.iterdir()) == []


def test_symlink_as_the_target_leading_out_is_refused(tmp_path: Path, node_root: Path) -> None:
    outside = tmp_path / "victim"
    outside.write_text("untouched")
    (node_root / "etc/link").symlink_to("../../../../../../../../.." + str(outside))
    with pytest.raises(PathEscapeError):
        fsops.write_file(Root(node_root), "/etc/link", b"new")
    assert outside.read_text() == "untouched"


def test_absolute_symlinks_are_read_inside_the_root(tmp_path: Path, node_root: Path) -> None:
    """On the node, /etc/ssl/certs -> /etc/pki/tls/certs means the node's own path."""
    outside = tmp_path / "etc-pki"
    outside.mkdir()
    (node_root / "etc/pki/tls/certs").mkdir(parents=True)
    (node_root / "etc/ssl").mkdir()
    (node_root / "etc/ssl/certs").symlink_to("/etc/pki/tls/certs")
    (node_root / "etc/hostpath").symlink_to(str(outside))
    cfg = mc(
        files=[file_entry("/etc/ssl/certs/ca.pem", "ca\n"), file_entry("/etc/hostpath/f", "x")]
    )
    effects(node_root).write_files(cfg.ignition.files)
    assert (node_root / "etc/pki/tls/certs/ca.pem").read_text() == "ca\n"
    assert (node_root / str(outside).lstrip("/") / "f").read_text() == "x"
    assert list(outside.iterdir()) == []  # the machine's own path is untouched


def test_a_symlink_at_the_target_is_replaced_not_written_through(node_root: Path) -> None:
    (node_root / "etc/real").write_text("keep")
    (node_root / "etc/resolv.conf").symlink_to("/etc/real")
    fsops.write_file(Root(node_root), "/etc/resolv.conf", b"nameserver 1.1.1.1\n")
    assert not (node_root / "etc/resolv.conf").is_symlink()
    assert (node_root / "etc/resolv.conf").read_bytes() == b"nameserver 1.1.1.1\n"
    assert (node_root / "etc/real").read_text() == "keep"


def test_leftover_temp_file_of_a_killed_writer_is_replaced(node_root: Path) -> None:
    (node_root / "etc/.motd.mcd-tmp").write_text("half")
    fsops.write_file(Root(node_root), "/etc/motd", b"full\n")
    assert (node_root / "etc/motd").read_bytes() == b"full\n"
    assert not (node_root / "etc/.motd.mcd-tmp").exists()


def dpkg_database(root: Path, package: str, paths: list[str]) -> None:
    admin = root / "var/lib/dpkg"
    (admin / "info").mkdir(parents=True)
    (admin / "status").write_text(
        f"Package: {package}\nStatus: install ok installed\nVersion: 1\n"
        "Architecture: all\nMaintainer: x <x@example.com>\nDescription: x\n\n"
    )
    (admin / f"info/{package}.list").write_text("/.\n/etc\n" + "".join(f"{p}\n" for p in paths))


def test_os_file_is_backed_up_and_restored_when_its_entry_goes(node_root: Path) -> None:
    dpkg_database(node_root, "base-files", ["/etc/motd"])
    (node_root / "etc/motd").write_text("Welcome to the OS\n")
    os.chmod(node_root / "etc/motd", 0o640)
    fx = effects(node_root)
    old = mc("rendered-worker-1", files=[file_entry("/etc/motd", "managed motd\n")])
    fx.write_files(old.ignition.files)
    assert (node_root / "etc/motd").read_text() == "managed motd\n"
    backup = node_root / "etc/machine-config-daemon/orig/etc/motd.mcdorig"
    assert backup.read_text() == "Welcome to the OS\n"
    assert mode_of(backup) == 0o640

    # a second write must not overwrite the first backup
    fx.write_files(mc(files=[file_entry("/etc/motd", "managed v2\n")]).ignition.files)
    assert backup.read_text() == "Welcome to the OS\n"

    new = mc("rendered-worker-2", files=[])
    fx.delete_stale_data(old.ignition, new.ignition)
    assert (node_root / "etc/motd").read_text() == "Welcome to the OS\n"
    assert mode_of(node_root / "etc/motd") == 0o640
    assert not backup.exists()


def test_the_package_database_is_looked_for_afresh_by_every_batch(node_root: Path) -> None:
    """Within one batch of files the rpm/dpkg database is looked for once; the next batch
    looks again, so a database that appears in between decides that batch's backups."""
    (node_root / "etc/motd").write_text("Welcome to the OS\n")
    (node_root / "etc/issue").write_text("OS release\n")
    fx = effects(node_root)
    fx.write_files(mc(files=[file_entry("/etc/motd", "managed\n")]).ignition.files)
    meta = node_root / "etc/machine-config-daemon"
    assert (meta / "noorig/etc/motd.mcdnoorig").exists()  # no database: not OS content
    dpkg_database(node_root, "base-files", ["/etc/motd", "/etc/issue"])
    fx.write_files(mc(files=[file_entry("/etc/issue", "managed\n")]).ignition.files)
    assert (meta / "orig/etc/issue.mcdorig").read_text() == "OS release\n"
    assert not (meta / "noorig/etc/issue.mcdnoorig").exists()


def test_ostree_usr_etc_marks_original_content(node_root: Path) -> None:
    (node_root / "usr/etc").mkdir(parents=True)
    (node_root / "usr/etc/chrony.conf").write_text("pool 2.rhel.pool.ntp.org\n")
    (node_root / "etc/chrony.conf").write_text("pool 2.rhel.pool.ntp.org\n")
    fx = effects(node_root)
    old = mc(files=[file_entry("/etc/chrony.conf", "server ntp.example.com\n")])
    fx.write_files(old.ignition.files)
    fx.delete_stale_data(old.ignition, mc(files=[]).ignition)
    assert (node_root / "etc/chrony.conf").read_text() == "pool 2.rhel.pool.ntp.org\n"


def test_managed_file_is_deleted_when_it_leaves_the_config(node_root: Path) -> None:
    dpkg_database(node_root, "base-files", ["/etc/motd"])
    (node_root / "etc/leftover").write_text("written by ignition at first boot\n")
    fx = effects(node_root)
    old = mc(files=[file_entry("/etc/leftover", "v1\n"), file_entry("/etc/new-file", "v1\n")])
    fx.write_files(old.ignition.files)
    stamp = node_root / "etc/machine-config-daemon/noorig/etc/leftover.mcdnoorig"
    assert stamp.exists() and stamp.read_bytes() == b""
    assert not (node_root / "etc/machine-config-daemon/noorig/etc/new-file.mcdnoorig").exists()
    fx.delete_stale_data(old.ignition, mc(files=[]).ignition)
    assert not (node_root / "etc/leftover").exists()
    assert not (node_root / "etc/new-file").exists()
    assert not stamp.exists()


def test_never_delete_list_and_dropin_replacement_keep_files(node_root: Path) -> None:
    fx = effects(node_root)
    old = mc(files=[
        file_entry("/etc/kubernetes/kubelet-ca.crt", "ca"),
        file_entry("/etc/docker/certs.d/registry:5000/ca.crt", "ca"),
        file_entry("/etc/systemd/system/crio.service.d/10-env.conf", "[Service]\n"),
    ])  # fmt: skip
    fx.write_files(old.ignition.files)
    new = mc(
        units=[
            {
                "name": "crio.service",
                "dropins": [{"name": "10-env.conf", "contents": "[Service]\n"}],
            }
        ]
    )
    fx.delete_stale_data(old.ignition, new.ignition)
    assert (node_root / "etc/kubernetes/kubelet-ca.crt").exists()
    assert (node_root / "etc/docker/certs.d/registry:5000/ca.crt").exists()
    assert (node_root / "etc/systemd/system/crio.service.d/10-env.conf").exists()


def test_no_log_line_carries_file_contents(
    node_root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    dpkg_database(node_root, "base-files", ["/etc/motd"])
    (node_root / "etc/motd").write_text("OS-MOTD-CONTENT")
    fx = effects(node_root)
    old = mc(
        files=[file_entry("/etc/motd", SECRET), file_entry("/etc/pull.json", SECRET, mode=0o600)]
    )
    fx.write_files(old.ignition.files)
    fx.delete_stale_data(old.ignition, mc(files=[]).ignition)
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "Writing file" in text
    assert "TOKEN" not in text and "OS-MOTD-CONTENT" not in text


def test_batch_cache_forgets_a_directory_the_batch_turned_into_a_symlink(tmp_path: Path) -> None:
    """Within one batch (a transaction's files), parents are resolved once; a symlink the
    batch itself makes in their place is followed at once, never the cached directory."""
    (tmp_path / "etc/d").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    root = Root(tmp_path)
    with root.caching():
        fsops.write_file(root, "/etc/d/f", b"before")
        fsops.write_symlink(root, "/etc/d", "/elsewhere")
        fsops.write_file(root, "/etc/d/f", b"after")
    assert (tmp_path / "elsewhere/f").read_bytes() == b"after"
    assert (tmp_path / "etc/d").is_symlink()


def test_batch_cache_trusts_nothing_from_before_the_batch(tmp_path: Path) -> None:
    """A directory replaced by a symlink escaping the root between two batches (or by
    anyone but the batch) is seen by the next batch: it starts with nothing cached."""
    (tmp_path / "etc/d").mkdir(parents=True)
    root = Root(tmp_path)
    with root.caching():
        fsops.write_file(root, "/etc/d/f", b"x")
    (tmp_path / "etc/d/f").unlink()
    (tmp_path / "etc/d").rmdir()
    (tmp_path / "etc/d").symlink_to("../../..")
    with root.caching(), pytest.raises(PathEscapeError):
        fsops.write_file(root, "/etc/d/f", b"y")


def test_batch_cache_is_this_threads_alone(tmp_path: Path) -> None:
    """Another thread's resolution inside a batch is never served from the batch's cache."""
    (tmp_path / "etc/d").mkdir(parents=True)
    (tmp_path / "other").mkdir()
    root = Root(tmp_path)
    seen: list[str] = []
    with root.caching():
        assert root.resolve("/etc/d/f") == "/etc/d/f"
        (tmp_path / "etc/d").rmdir()  # not through fsops: only a fresh walk sees it
        (tmp_path / "etc/d").symlink_to("/other")
        worker = threading.Thread(target=lambda: seen.append(root.resolve("/etc/d/f")))
        worker.start()
        worker.join()
    assert seen == ["/other/f"]


_NAMES = st.sampled_from(["a", "b", "c"])
_OPS = st.lists(
    st.tuples(
        st.sampled_from(["file", "link", "remove"]),
        st.lists(_NAMES, min_size=1, max_size=3).map(lambda p: "/etc/" + "/".join(p)),
        st.sampled_from(["/etc/a", "/etc/b/c", "../..", "/elsewhere", "c"]),
    ),
    max_size=12,
)


def _run_ops(root: Root, ops: list[tuple[str, str, str]]) -> list[str]:
    outcomes = []
    for op, path, target in ops:
        try:
            if op == "file":
                fsops.write_file(root, path, path.encode())
            elif op == "link":
                fsops.write_symlink(root, path, target)
            else:
                fsops.remove(root, path)
            outcomes.append("ok")
        except (OSError, HostError) as e:
            outcomes.append(type(e).__name__)
    return outcomes


def _tree(top: Path) -> dict[str, str]:
    found = {}
    for dirpath, dirnames, filenames in os.walk(top):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = str(p.relative_to(top))
            found[rel] = (
                f"-> {os.readlink(p)}"
                if p.is_symlink()
                else ("dir" if p.is_dir() else p.read_text())
            )
    return found


@given(ops=_OPS)
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_a_cached_batch_writes_exactly_what_fresh_resolution_writes(
    tmp_path: Path, ops: list[tuple[str, str, str]]
) -> None:
    """Any sequence of file, symlink and removal writes (symlinks that loop, climb out of the
    root or replace directories among them) ends the same, with the same errors, whether
    parents are resolved afresh for every write or once per batch."""
    results = []
    for cached in (False, True):
        top = tmp_path / f"cached-{cached}-{len(list(tmp_path.iterdir()))}"
        (top / "etc").mkdir(parents=True)
        (top / "elsewhere").mkdir()
        root = Root(top)
        if cached:
            with root.caching():
                outcomes = _run_ops(root, ops)
        else:
            outcomes = _run_ops(root, ops)
        results.append((outcomes, _tree(top)))
    assert results[0] == results[1]


def test_the_target_check_walks_missing_parents_on_a_live_root_too(node_root: Path) -> None:
    """On a host (``--root /``) a file under directories not made yet is as writable as on a
    temp root, and a file in the way is named by its node path (the check only reads)."""
    missing = "/mcd-test-no-such-dir-19/sub/app.conf"
    assert not os.path.lexists(missing.rsplit("/", 2)[0])
    targets.check_targets(Root("/"), mc(files=[file_entry(missing, "x\n")]).ignition, ostree=False)
    over = mc(files=[file_entry("/etc/passwd/app.conf", "x\n")]).ignition
    with pytest.raises(HostError, match=r"^cannot write file /etc/passwd/app.conf: "
                       r"/etc/passwd is not a directory$"):  # fmt: skip
        targets.check_targets(Root("/"), over, ostree=False)
    (node_root / "etc/app").write_text("a file\n")
    with pytest.raises(HostError, match=r"/etc/app/x.conf: /etc/app is not a directory$"):
        targets.check_targets(
            Root(node_root), mc(files=[file_entry("/etc/app/x.conf", "x\n")]).ignition,
            ostree=False,
        )  # fmt: skip


def test_a_name_too_long_for_a_plain_temp_and_a_directory_in_a_links_way(tmp_path: Path) -> None:
    """The two rare paths (their modules load only then): a 250-byte name is written through
    a hashed temp name, none left behind; a directory where a symlink goes is replaced."""
    root = Root(tmp_path)
    long_name = "/etc/" + "n" * 250
    fsops.write_file(root, long_name, b"long")
    assert (tmp_path / long_name.lstrip("/")).read_bytes() == b"long"
    assert sorted(p.name for p in (tmp_path / "etc").iterdir()) == ["n" * 250]
    (tmp_path / "etc/link/inside").mkdir(parents=True)
    fsops.write_symlink(root, "/etc/link", "/usr/share/target")
    assert os.readlink(tmp_path / "etc/link") == "/usr/share/target"
