"""Duplicate SSH keys, three differential cases against upstream's parsing (issue 32).

Upstream parses a rendered config with ``ctrlcommon.ParseAndConvertConfig``: a spec 3
document goes through Ignition's ``ign3.Parse``, whose ``validate.ValidateDups`` refuses
the same string twice in one list (``duplicate entry defined``); a spec 2.2 document is
first cleaned by ``removeIgnDuplicateFilesUnitsUsers``, which keeps each key once, in
order (``dedupePasswdUserSSHKeys``). Each case says what upstream does and checks that
mcd does the same; where ``ignition-validate`` is installed, Ignition's own verdict on
the spec 3 cases is checked too.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from mcd.host.accounts.users import authorized_keys
from mcd.model import gate
from mcd.model.machineconfig import machine_config_from_object
from tests.builders import mc_doc

KEY_A = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKeyA core@a"
KEY_B = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQKeyB core@b"


def _ignition_verdict(doc: dict[str, Any], tmp_path: Path) -> int | None:
    if shutil.which("ignition-validate") is None:
        return None
    path = tmp_path / "config.ign"
    path.write_text(json.dumps(doc["spec"]["config"]))
    return subprocess.run(
        ["ignition-validate", str(path)], capture_output=True, check=False, timeout=60
    ).returncode


def test_v3_same_key_twice_in_one_user_is_refused_as_ignition_refuses_it(tmp_path: Path) -> None:
    """Upstream: ``ign3.Parse`` reports ``duplicate entry defined``; the update is refused."""
    doc = mc_doc(
        version="3.3.0", users=[{"name": "core", "sshAuthorizedKeys": [KEY_A, KEY_B, KEY_A]}]
    )
    found = gate.problems(machine_config_from_object(doc))
    assert found == [
        "spec.config.passwd.users[0].sshAuthorizedKeys[2]: duplicate entry defined "
        "(the same key as sshAuthorizedKeys[0])"
    ]
    assert KEY_A.split()[1] not in found[0]  # the key itself is never quoted
    assert _ignition_verdict(doc, tmp_path) in (None, 1)


def test_v2_same_key_twice_is_kept_once_in_order_as_upstream_dedupes_it() -> None:
    """Upstream: a spec 2.2 user's keys pass through ``dedupePasswdUserSSHKeys``."""
    doc = mc_doc(
        version="2.2.0", users=[{"name": "core", "sshAuthorizedKeys": [KEY_B, KEY_A, KEY_B]}]
    )
    cfg = machine_config_from_object(doc)
    assert gate.problems(cfg) == []
    assert cfg.ignition.passwd.users[0].ssh_authorized_keys == (KEY_B, KEY_A)
    assert authorized_keys(cfg.ignition.passwd.users) == f"{KEY_B}\n{KEY_A}\n".encode()


def test_v3_one_key_in_two_users_is_accepted_as_ignition_accepts_it(tmp_path: Path) -> None:
    """Upstream: Ignition's duplicate check is per list, so two users may share a key
    (the daemon then refuses any user but core, a reconcilability rule, not a parse one)."""
    doc = mc_doc(
        version="3.3.0",
        users=[
            {"name": "core", "sshAuthorizedKeys": [KEY_A]},
            {"name": "admin", "sshAuthorizedKeys": [KEY_A]},
        ],
    )
    assert gate.problems(machine_config_from_object(doc)) == []
    assert _ignition_verdict(doc, tmp_path) in (None, 0)


@pytest.mark.parametrize("version", ["3.0.0", "3.2.0", "3.4.0", "3.5.0"])
def test_every_spec_3_version_refuses_duplicates(version: str) -> None:
    doc = mc_doc(version=version, users=[{"name": "core", "sshAuthorizedKeys": [KEY_A, KEY_A]}])
    found = gate.problems(machine_config_from_object(doc))
    assert any("duplicate entry defined" in p for p in found)
