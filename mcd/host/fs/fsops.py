"""Atomic filesystem operations inside a node root.

Every write goes to a temp file in the target's own directory, gets its owner
and mode before any data, is written, fsynced and renamed over the target; the
directory is then fsynced so the rename itself survives a power cut. A reader
(or an agent killed at any instant) sees the old bytes or the new ones, never a
mix. The temp name is derived from the target name, so a leftover from a killed
writer is replaced by the next write of the same file instead of piling up.

All paths are node paths resolved through :class:`Root`: parents are followed
the way the node sees them and a path climbing out of the root is refused
before anything is created.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass

from mcd.host.errors import HostError, PathEscapeError
from mcd.host.rootfs import Root

DIR_MODE = 0o755
FILE_MODE = 0o644
_TMP_SUFFIX = ".mcd-tmp"
_NAME_MAX = 255


@dataclass(frozen=True)
class Ownership:
    """Numeric owner of a written file; ``None`` keeps what the writer gets (root)."""

    uid: int | None = None
    gid: int | None = None


ROOT_OWNED = Ownership(0, 0)


def target_path(root: Root, node_path: str) -> str:
    """The agent-side path to write ``node_path`` at, refusing escapes.

    Parents are resolved inside the root. The last component is not followed
    (a rename replaces a symlink rather than writing through it), but a symlink
    there that leads out of the root is still refused: writing over it would
    hide where it pointed, and the node would not end up as the config says.
    """
    if not node_path.startswith("/"):
        raise PathEscapeError(f"refusing to write {node_path!r}: not an absolute path")
    try:
        host_path = root.host(root.resolve(node_path))
        if os.path.islink(host_path):
            root.resolve(node_path, follow_last=True)
    except PathEscapeError as e:
        raise PathEscapeError(f"refusing to write {node_path}: {e}") from e
    return host_path


def ensure_dir(root: Root, node_dir: str, mode: int = DIR_MODE) -> str:
    """``mkdir -p`` inside the root; created directories get exactly ``mode``."""
    resolved = root.resolve(node_dir, follow_last=True) if node_dir != "/" else "/"
    return _make_dirs(root, root.host(resolved), node_dir, mode)


def _make_dirs(
    root: Root, host_dir: str, node_dir: str, mode: int, made: list[str] | None = None
) -> str:
    """Create the missing tail of an already resolved directory path (each one created is
    added to ``made``, parents first)."""
    missing: list[str] = []
    probe = host_dir
    while not os.path.isdir(probe):
        if os.path.lexists(probe):
            raise HostError(f"cannot create directory {node_dir}: {probe} exists and is not one")
        missing.append(probe)
        probe = os.path.dirname(probe)
    if missing:
        root.changed()
    for directory in reversed(missing):
        try:
            os.mkdir(directory, mode)
        except FileExistsError:
            continue
        os.chmod(directory, mode)  # mkdir's mode is filtered by the umask
        if made is not None:
            made.append(directory)
    return host_dir


def _rmtree(host_path: str) -> None:
    """A directory where a file goes, removed (rare: shutil and its compressors are loaded
    only then, not at the start-up of every command)."""
    import shutil  # noqa: PLC0415

    shutil.rmtree(host_path)


def _temp_name(host_path: str) -> str:
    directory, name = os.path.split(host_path)
    temp = f".{name}{_TMP_SUFFIX}"
    if len(temp.encode()) > _NAME_MAX:
        import hashlib  # noqa: PLC0415  (a name this long is rare: start-up of every command)

        temp = f".mcd-tmp-{hashlib.sha256(name.encode()).hexdigest()[:40]}"
    return os.path.join(directory, temp)


def _open_temp(host_path: str) -> tuple[int, str]:
    temp = _temp_name(host_path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        return os.open(temp, flags, 0o600), temp
    except FileExistsError:
        _remove_any(temp)  # left behind by a writer that was killed
        return os.open(temp, flags, 0o600), temp


def fsync_dir(host_dir: str) -> None:
    fd = os.open(host_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_file(
    root: Root,
    node_path: str,
    data: bytes,
    mode: int = FILE_MODE,
    owner: Ownership = Ownership(),
    dir_mode: int = DIR_MODE,
    *,
    sync_dir: bool = True,
) -> None:
    """Atomically replace ``node_path`` with ``data`` (owner and mode set before data).

    ``sync_dir=False`` leaves the directory's fsync to the caller (:func:`fsync_dir` once
    for several files of one directory): the rename is not durable until then.
    """
    staged = stage_file(root, node_path, data, mode, owner, dir_mode)
    commit_staged(root, staged)
    if sync_dir:
        fsync_dir(os.path.dirname(staged.host_path))


@dataclass(frozen=True)
class Staged:
    """A file's new contents in its temp file, fsynced, not yet renamed over its target."""

    node_path: str
    host_path: str
    """Where :func:`target_path` resolved ``node_path`` when it was staged."""
    temp: str
    was_link: bool


def stage_file(
    root: Root,
    node_path: str,
    data: bytes,
    mode: int = FILE_MODE,
    owner: Ownership = Ownership(),
    dir_mode: int = DIR_MODE,
    made: list[str] | None = None,
) -> Staged:
    """The first half of :func:`write_file`: the temp file beside ``node_path``'s target,
    owner and mode set before the data, written and fsynced. The target is untouched until
    :func:`commit_staged`; :func:`discard_staged` removes the temp instead. Directories
    created for it are added to ``made``."""
    host_path = target_path(root, node_path)
    _make_dirs(root, os.path.dirname(host_path), os.path.dirname(node_path), dir_mode, made)
    try:
        kind = stat.S_IFMT(os.lstat(host_path).st_mode)  # one lstat: link? directory?
    except OSError:
        kind = 0  # nothing there (the rename will say if it cannot be written)
    if kind == stat.S_IFDIR:
        raise HostError(f"cannot write file {node_path}: a directory is in the way")
    fd, temp = _open_temp(host_path)
    try:
        try:
            if owner.uid is not None or owner.gid is not None:
                os.fchown(fd, _or_keep(owner.uid), _or_keep(owner.gid))
            os.fchmod(fd, mode)  # after chown: a chown clears setuid/setgid bits
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
    except BaseException:
        _remove_any(temp)
        raise
    return Staged(node_path, host_path, temp, kind == stat.S_IFLNK)


def commit_staged(root: Root, staged: Staged) -> None:
    """Rename a staged temp file over its target (the directory's fsync is the caller's)."""
    try:
        os.rename(staged.temp, staged.host_path)
    except BaseException:
        _remove_any(staged.temp)
        raise
    finally:
        if staged.was_link:  # a symlink replaced by a file: paths under it lead elsewhere now
            root.changed()


def discard_staged(staged: Staged) -> None:
    """Remove a staged temp file that is not to be renamed (gone already: nothing to do)."""
    _remove_any(staged.temp)


def remove_temp(root: Root, node_path: str) -> bool:
    """Remove the temp file a writer killed before its rename left beside ``node_path``."""
    return _remove_any(_temp_name(target_path(root, node_path)))


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _replace(
    host_path: str,
    fill: Callable[[int], None],
    finish: Callable[[str], None] | None = None,
    *,
    sync_dir: bool = True,
) -> None:
    """Fill a temp file next to ``host_path``, fsync it, rename it over, fsync the directory."""
    fd, temp = _open_temp(host_path)
    try:
        try:
            fill(fd)
            os.fsync(fd)
        finally:
            os.close(fd)
        if finish is not None:
            finish(temp)
        os.rename(temp, host_path)
    except BaseException:
        _remove_any(temp)
        raise
    if sync_dir:
        fsync_dir(os.path.dirname(host_path))


def _or_keep(ident: int | None) -> int:
    return -1 if ident is None else ident


def write_symlink(root: Root, node_path: str, target: str) -> None:
    """Atomically make ``node_path`` a symlink to ``target`` (whatever was there is replaced)."""
    host_path = target_path(root, node_path)
    ensure_dir(root, os.path.dirname(node_path) or "/")
    try:
        if os.path.isdir(host_path) and not os.path.islink(host_path):
            _rmtree(host_path)
        temp = _temp_name(host_path)
        _remove_any(temp)
        os.symlink(target, temp)
        try:
            os.rename(temp, host_path)
        except BaseException:
            _remove_any(temp)
            raise
    finally:
        root.changed()  # a new symlink: paths through it lead elsewhere
    fsync_dir(os.path.dirname(host_path))


def remove(root: Root, node_path: str, *, sync_dir: bool = True) -> bool:
    """Remove a file, symlink or directory tree (``rm -rf``); False when nothing was there.
    ``sync_dir=False`` leaves the directory's fsync to the caller (one for several)."""
    host_path = target_path(root, node_path)
    try:
        existed = _remove_any(host_path)
    finally:
        root.changed()  # a directory or symlink may be gone
    if existed and sync_dir:
        fsync_dir(os.path.dirname(host_path))
    return existed


def remove_file(root: Root, node_path: str, *, sync_dir: bool = True) -> bool:
    """Remove a file or symlink (``rm -f``); False when nothing was there. A directory found
    there raises ``IsADirectoryError``: a path a config named as a file never makes mcd
    delete a tree. ``sync_dir=False``: as :func:`remove`'s."""
    host_path = target_path(root, node_path)
    if os.path.isdir(host_path) and not os.path.islink(host_path):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), node_path)
    return remove(root, node_path, sync_dir=sync_dir)


def _remove_any(host_path: str) -> bool:
    try:
        st = os.lstat(host_path)
    except (FileNotFoundError, NotADirectoryError):  # a file where a parent should be
        return False
    if stat.S_ISDIR(st.st_mode):
        _rmtree(host_path)
    else:
        try:
            os.unlink(host_path)
        except FileNotFoundError:
            return False
    return True


def link_over(root: Root, source: str, destination: str, *, sync_dir: bool = True) -> bool:
    """Make ``destination`` the regular file ``source`` is (a hard link renamed over it:
    the same inode, so its bytes, mode, owner, times and xattrs, with nothing copied).
    False, with nothing changed, where a link cannot be made (another filesystem, a link
    refused): the caller copies instead. ``sync_dir=False``: as :func:`write_file`'s."""
    src = target_path(root, source)
    if not stat.S_ISREG(os.lstat(src).st_mode):
        return False
    host_dest = target_path(root, destination)
    ensure_dir(root, os.path.dirname(destination))
    if os.path.isdir(host_dest) and not os.path.islink(host_dest):
        raise HostError(f"cannot write file {destination}: a directory is in the way")
    was_link = os.path.islink(host_dest)
    temp = _temp_name(host_dest)
    _remove_any(temp)  # left behind by a writer that was killed
    try:
        os.link(src, temp, follow_symlinks=False)
    except OSError as e:
        if e.errno not in NO_LINK:
            raise
        return False
    try:
        os.rename(temp, host_dest)
    except BaseException:
        _remove_any(temp)
        raise
    finally:
        if was_link:
            root.changed()
    if sync_dir:
        fsync_dir(os.path.dirname(host_dest))
    return True


NO_LINK = frozenset({errno.EXDEV, errno.EPERM, errno.EMLINK, errno.EACCES, errno.ENOTSUP,
                     errno.EOPNOTSUPP})  # fmt: skip
"""Why a hard link may be refused where a copy would do."""


def copy_preserving(root: Root, source: str, destination: str) -> None:
    """``cp -a`` of one file or symlink, done atomically: bytes, mode, owner, times, xattrs."""
    src = target_path(root, source)
    st = os.lstat(src)
    if stat.S_ISLNK(st.st_mode):
        write_symlink(root, destination, os.readlink(src))
        return
    if not stat.S_ISREG(st.st_mode):
        raise HostError(f"cannot back up {source}: not a regular file or symlink")
    host_dest = target_path(root, destination)
    ensure_dir(root, os.path.dirname(destination))
    was_link = os.path.islink(host_dest)

    def fill(fd: int) -> None:
        os.fchown(fd, st.st_uid, st.st_gid)
        os.fchmod(fd, stat.S_IMODE(st.st_mode))
        with open(src, "rb") as reader:
            while chunk := reader.read(1 << 20):
                _write_all(fd, chunk)
        _copy_xattrs(src, fd)

    def keep_times(temp: str) -> None:
        os.utime(temp, ns=(st.st_atime_ns, st.st_mtime_ns), follow_symlinks=False)

    try:
        _replace(host_dest, fill, keep_times)
    finally:
        if was_link:
            root.changed()


def _copy_xattrs(src: str, fd: int) -> None:
    """Keep extended attributes (the SELinux label among them), as ``cp -a`` does."""
    try:
        names = os.listxattr(src, follow_symlinks=False)
    except OSError as e:
        if e.errno in (errno.ENOTSUP, errno.EOPNOTSUPP):
            return
        raise
    for name in names:
        try:
            os.setxattr(fd, name, os.getxattr(src, name, follow_symlinks=False))
        except OSError as e:
            if e.errno not in (errno.ENOTSUP, errno.EOPNOTSUPP, errno.EPERM):
                raise
