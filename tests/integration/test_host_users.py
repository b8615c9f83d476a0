"""SSH keys and password hash of core on a temp root, with the real ``usermod --prefix``."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

import pytest

from mcd.host.effects import HostEffects
from mcd.host.rootfs import Root
from mcd.host.runner import Runner
from mcd.host.systemd.offline import OfflineSystemd
from tests.builders import mc

KEY_A = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKEYAAAA admin@a"
KEY_B = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQKEYBBBB admin@b"
HASH = "$6$rounds=4096$saltsalt$HASHVALUEhashvalueHASHVALUE"


def effects(root: Path) -> HostEffects:
    r = Root(root)
    return HostEffects(r, OfflineSystemd(r, Runner()))


def shadow_field(root: Path, user: str) -> str:
    for line in (root / "etc/shadow").read_text().splitlines():
        if line.split(":")[0] == user:
            return line.split(":")[1]
    raise AssertionError(f"{user} not in shadow")


def owner_mode(path: Path) -> tuple[int, int, int]:
    st = path.lstat()
    return st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)


def test_ssh_keys_land_with_modes_and_owner(node_root: Path) -> None:
    users = mc(users=[{"name": "core", "sshAuthorizedKeys": [KEY_A, KEY_B]}]).ignition.passwd.users
    assert effects(node_root).update_ssh_keys(users)
    key_file = node_root / "home/core/.ssh/authorized_keys.d/ignition"
    assert key_file.read_text() == f"{KEY_A}\n{KEY_B}\n"
    assert owner_mode(key_file) == (1000, 1000, 0o600)
    assert owner_mode(node_root / "home/core/.ssh") == (1000, 1000, 0o700)
    assert owner_mode(node_root / "home/core/.ssh/authorized_keys.d") == (1000, 1000, 0o700)


def test_ssh_dir_owned_by_someone_else_is_replaced(node_root: Path) -> None:
    ssh = node_root / "home/core/.ssh"
    ssh.mkdir()
    (ssh / "planted").write_text("x")
    os.chown(ssh, 0, 0)
    effects(node_root).update_ssh_keys(
        mc(users=[{"name": "core", "sshAuthorizedKeys": [KEY_A]}]).ignition.passwd.users
    )
    assert not (ssh / "planted").exists()
    assert owner_mode(ssh) == (1000, 1000, 0o700)


def test_no_keys_still_writes_an_empty_file(node_root: Path) -> None:
    effects(node_root).update_ssh_keys(mc(users=[{"name": "core"}]).ignition.passwd.users)
    assert (node_root / "home/core/.ssh/authorized_keys.d/ignition").read_bytes() == b""


def test_without_core_nothing_is_written_or_created(node_root: Path) -> None:
    (node_root / "etc/passwd").write_text("root:x:0:0:root:/root:/bin/bash\n")
    fx = effects(node_root)
    users = mc(
        users=[{"name": "core", "sshAuthorizedKeys": [KEY_A], "passwordHash": HASH}]
    ).ignition.passwd.users
    assert not fx.update_ssh_keys(users)
    fx.set_password_hashes((), users)
    assert not (node_root / "home/core/.ssh").exists()
    assert "core" not in (node_root / "etc/passwd").read_text()


def test_password_hash_set_with_usermod_and_locked_when_removed(
    node_root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    fx = effects(node_root)
    with_hash = mc(users=[{"name": "core", "passwordHash": HASH}]).ignition.passwd.users
    fx.set_password_hashes((), with_hash)
    assert shadow_field(node_root, "core") == HASH
    assert stat.S_IMODE((node_root / "etc/shadow").stat().st_mode) == 0o640
    assert shadow_field(node_root, "root") == "*"  # other entries untouched
    # unchanged hash: usermod is not run again
    before = sum("usermod" in r.getMessage() for r in caplog.records)
    fx.set_password_hashes(with_hash, with_hash)
    assert sum("usermod" in r.getMessage() for r in caplog.records) == before
    # core leaves the config: locked, never an empty (password-less) hash
    fx.set_password_hashes(with_hash, ())
    assert shadow_field(node_root, "core") == "*"
    assert HASH not in caplog.text and "saltsalt" not in caplog.text
    assert "<redacted>" in caplog.text


def test_unset_hash_means_no_password_login(node_root: Path) -> None:
    fx = effects(node_root)
    fx.set_password_hashes(
        (), mc(users=[{"name": "core", "passwordHash": HASH}]).ignition.passwd.users
    )
    fx.set_password_hashes((), mc(users=[{"name": "core"}]).ignition.passwd.users)
    assert shadow_field(node_root, "core") == "*"
