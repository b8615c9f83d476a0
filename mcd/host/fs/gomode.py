"""Go's ``os.FileMode`` as upstream prints it in ``mode mismatch`` reasons."""

from __future__ import annotations

import stat

from mcd.model.text import gooctal

MODE_DIR = 1 << 31
MODE_SYMLINK = 1 << 27
MODE_DEVICE = 1 << 26
MODE_NAMED_PIPE = 1 << 25
MODE_SOCKET = 1 << 24
MODE_SETUID = 1 << 23
MODE_SETGID = 1 << 22
MODE_CHAR_DEVICE = 1 << 21
MODE_STICKY = 1 << 20
_LETTERS = "dalTLDpSugct?"
_TYPE_BITS = {
    stat.S_IFDIR: MODE_DIR,
    stat.S_IFLNK: MODE_SYMLINK,
    stat.S_IFBLK: MODE_DEVICE,
    stat.S_IFCHR: MODE_DEVICE | MODE_CHAR_DEVICE,
    stat.S_IFIFO: MODE_NAMED_PIPE,
    stat.S_IFSOCK: MODE_SOCKET,
}


def from_stat(st_mode: int) -> int:
    """Convert a POSIX ``st_mode`` to Go's FileMode bits (as ``os.Lstat`` does)."""
    mode = (st_mode & 0o777) | _TYPE_BITS.get(stat.S_IFMT(st_mode), 0)
    if st_mode & stat.S_ISUID:
        mode |= MODE_SETUID
    if st_mode & stat.S_ISGID:
        mode |= MODE_SETGID
    if st_mode & stat.S_ISVTX:
        mode |= MODE_STICKY
    return mode


def mode_string(mode: int) -> str:
    """Go's ``FileMode.String()``: ``-rw-r--r--``, ``Lrwxrwxrwx``, ``drwxr-xr-x``."""
    letters = "".join(c for i, c in enumerate(_LETTERS) if mode & (1 << (31 - i)))
    rwx = "".join(c if mode & (1 << (8 - i)) else "-" for i, c in enumerate("rwxrwxrwx"))
    return (letters or "-") + rwx


def describe(mode: int) -> str:
    """``%[1]v/%[1]d/%#[1]o`` as in upstream's mode mismatch message."""
    return f"{mode_string(mode)}/{mode}/{gooctal(mode)}"
