"""SSH keys and password hash of ``core`` (upstream ``updateSSHKeys``, ``SetPasswordHash``).

Users are never created: with no ``core`` in the root's ``/etc/passwd`` there
is nothing to do. The password is changed by the real ``usermod --prefix``
working on the root's own shadow file, and the hash never appears in a log.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Sequence

from mcd.host.accounts.passwd import Account, Accounts, shadow_hash
from mcd.host.errors import HostError
from mcd.host.fs import fsops
from mcd.host.rootfs import Root
from mcd.host.runner import CommandError, Runner
from mcd.model.ignition.config import User
from mcd.model.vocabulary import SSH_KEY_PATH

log = logging.getLogger(__name__)

CORE = "core"
SSH_DIR = "/home/core/.ssh"
SSH_KEYS_DIR = SSH_DIR + "/authorized_keys.d"
PRIVATE_DIR_MODE = 0o700
KEY_FILE_MODE = 0o600
NO_PASSWORD = "*"
"""Locked: no password login. Upstream leaves users that left the config with an
empty hash (``usermod -p ""``), which PAM's ``nullok`` turns into a login without
any password; mcd locks them instead."""


def authorized_keys(users: Sequence[User]) -> bytes:
    """Every key of every user, one per line (the file is written even when empty)."""
    return "".join(f"{key}\n" for user in users for key in user.ssh_authorized_keys).encode()


def update_ssh_keys(root: Root, users: Sequence[User], accounts: Accounts | None = None) -> bool:
    """Write ``authorized_keys.d/ignition`` for core; False when there is no core user."""
    core = (accounts or Accounts(root)).user(CORE)
    if core is None:
        log.info("No %s user on the node; not writing SSH keys", CORE)
        return False
    _private_dirs(root, core)
    log.info("Writing SSH keys to %s", SSH_KEY_PATH)
    fsops.write_file(
        root,
        SSH_KEY_PATH,
        authorized_keys(users),
        KEY_FILE_MODE,
        fsops.Ownership(core.uid, core.gid),
        dir_mode=PRIVATE_DIR_MODE,
    )
    return True


def _private_dirs(root: Root, core: Account) -> None:
    ssh_dir = fsops.target_path(root, SSH_DIR)
    try:
        st = os.lstat(ssh_dir)
    except FileNotFoundError:
        st = None
    if st is not None and st.st_uid != core.uid:
        # a .ssh owned by someone else would lock core out (OCPBUGS-11832)
        log.info("Removing %s: owned by uid %d, not %s", SSH_DIR, st.st_uid, CORE)
        if os.path.isdir(ssh_dir) and not os.path.islink(ssh_dir):
            shutil.rmtree(ssh_dir)
        else:
            os.unlink(ssh_dir)
    fsops.ensure_dir(root, "/home/core")
    for node_dir in (SSH_DIR, SSH_KEYS_DIR):
        host_dir = fsops.target_path(root, node_dir)
        if os.path.islink(host_dir) or (os.path.lexists(host_dir) and not os.path.isdir(host_dir)):
            os.unlink(host_dir)
        if not os.path.isdir(host_dir):
            os.mkdir(host_dir, PRIVATE_DIR_MODE)
        os.chown(host_dir, core.uid, core.gid, follow_symlinks=False)
        os.chmod(host_dir, PRIVATE_DIR_MODE)


def set_password_hashes(
    root: Root,
    runner: Runner,
    old: Sequence[User],
    new: Sequence[User],
    accounts: Accounts | None = None,
) -> None:
    """Give each configured user its hash (``*`` when unset); lock users that left."""
    accounts = accounts or Accounts(root)
    new_names = {u.name for u in new}
    for user in old:
        if user.name not in new_names and accounts.user(user.name) is not None:
            try:
                _usermod(root, runner, user.name, NO_PASSWORD)
            except CommandError as e:
                log.warning("Could not lock password of %s: %s", user.name, e)
    if accounts.user(CORE) is None:
        log.info("No %s user on the node; not setting password hashes", CORE)
        return
    for user in new:
        if accounts.user(user.name) is None:
            log.warning("User %s does not exist on the node; users are never created", user.name)
            continue
        desired = user.password_hash or NO_PASSWORD
        if shadow_hash(root, user.name) == desired:
            continue
        try:
            _usermod(root, runner, user.name, desired)
        except CommandError as e:
            raise HostError(f"failed to reset password for {user.name}: {e}") from e
        log.info("Password hash of %s updated", user.name)


def _usermod(root: Root, runner: Runner, name: str, password_hash: str) -> None:
    argv = ["usermod"]
    if root.path != "/":
        argv += ["--prefix", root.path]
    argv += ["-p", password_hash, name]
    runner.run(argv, secret=(len(argv) - 2,))
