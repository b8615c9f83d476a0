"""Users and groups of the node, read from the root's own ``/etc/passwd`` and ``/etc/group``.

Never the agent's: inside a pod ``getpwnam`` would answer from the container
image, and ``core`` on the node is not ``core`` in the container.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mcd.host.errors import HostError
from mcd.host.fs.fsops import Ownership
from mcd.host.rootfs import Root
from mcd.model.ignition.config import File, Owner

PASSWD = "/etc/passwd"
GROUP = "/etc/group"
SHADOW = "/etc/shadow"


@dataclass(frozen=True)
class Account:
    name: str
    uid: int
    gid: int
    home: str


class Accounts:
    """Name lookups in one root's account databases (read once, on first use)."""

    def __init__(self, root: Root) -> None:
        self._root = root
        self._users: dict[str, Account] | None = None
        self._groups: dict[str, int] | None = None

    def user(self, name: str) -> Account | None:
        if self._users is None:
            self._users = {}
            for fields in _entries(self._root, PASSWD, 7):
                try:
                    account = Account(fields[0], int(fields[2]), int(fields[3]), fields[5])
                except ValueError:
                    continue
                self._users.setdefault(account.name, account)
        return self._users.get(name)

    def group_id(self, name: str) -> int | None:
        if self._groups is None:
            self._groups = {}
            for fields in _entries(self._root, GROUP, 4):
                try:
                    self._groups.setdefault(fields[0], int(fields[2]))
                except ValueError:
                    continue
        return self._groups.get(name)

    def _uid_of(self, name: str) -> int | None:
        account = self.user(name)
        return account.uid if account else None

    def ownership(self, file: File) -> Ownership:
        """Owner of an Ignition file: id, else name looked up in the root, else root (0)."""
        uid = _resolve(
            file.user, lambda n: getattr(self.user(n), "uid", None), "UserID for username"
        )
        gid = _resolve(file.group, self.group_id, "GroupID for group")
        return Ownership(uid, gid)


def _resolve(owner: Owner, lookup: Callable[[str], int | None], what: str) -> int:
    if owner.id is not None:
        return owner.id
    if owner.name:
        ident = lookup(owner.name)
        if ident is None:
            raise HostError(f"failed to retrieve {what}: {owner.name}")
        return ident
    return 0


def _entries(root: Root, path: str, width: int) -> list[list[str]]:
    try:
        text = root.read_bytes(path).decode("utf-8", "replace")
    except FileNotFoundError:
        return []
    rows = []
    for line in text.splitlines():
        if not line or line.startswith(("#", "+", "-")):
            continue
        fields = line.split(":")
        if len(fields) >= width:
            rows.append(fields)
    return rows


def shadow_hash(root: Root, user: str) -> str | None:
    """The second field of the root's shadow entry for ``user`` (``getent shadow``)."""
    for fields in _entries(root, SHADOW, 2):
        if fields[0] == user:
            return fields[1]
    return None
