"""Secrets sealed (issue 14, item 6), on a temp root and through the command line.

Every state file is 0600 (the journal too, while an update is interrupted), its
directories private, modes left too open by an older version fixed at the next
start; and no output of the commands (stdout, stderr, ``--json``) carries a marker
planted in file contents, an SSH key, a password hash or a pull secret, on success,
on refusal, on a parse error next to the secret, or on drift.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from mcd.agent.update.journal import JOURNAL, NEW_DOC, OLD_DOC
from mcd.cli import cli
from mcd.model.vocabulary import CURRENT_CONFIG_PATH
from tests.builders import file_entry, mc_doc
from tests.e2e.harness import BIN, make_root

MARKERS = ("MARKER-FILE", "MARKER-SSH", "MARKER-HASH", "MARKER-PULL", "MARKER-DB")
PULL = '{"auths":{"quay.io":{"auth":"MARKER-PULL"}}}'


def secret_doc(name: str, app: str = "threads=4\n", **extra: Any) -> dict[str, Any]:
    files = [
        file_entry("/etc/app.conf", app + "# MARKER-FILE\n"),
        file_entry("/var/lib/kubelet/config.json", PULL, 0o600),
        file_entry("/etc/app/db.conf", "password=MARKER-DB\n", 0o640),
    ]
    users = [{"name": "core", "sshAuthorizedKeys": ["ssh-ed25519 MARKER-SSH core@x"],
              "passwordHash": "$6$salt$MARKER-HASH"}]  # fmt: skip
    return mc_doc(name, files=files, users=users, **extra)


def run(*args: str) -> tuple[int, str]:
    env = {"PATH": f"{BIN}:{os.environ['PATH']}", "MCD_TEST_PYTHON": sys.executable}
    result = CliRunner().invoke(cli, list(args), env=env)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout + result.stderr


def assert_clean(output: str, markers: tuple[str, ...] = MARKERS) -> None:
    for marker in markers:
        assert marker not in output, f"{marker} leaked: {output[-1500:]}"


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_no_command_output_carries_a_secret(tmp_path: Path) -> None:
    root = tmp_path / "root"
    make_root(root)
    (root / "run/ostree-booted").unlink()
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    one.write_text(json.dumps(secret_doc("rendered-worker-1")))
    two.write_text(json.dumps(secret_doc("rendered-worker-2", app="threads=8\n")))
    outputs = []
    for args in (
        ["once-from", str(one), "--root", str(root), "--skip-reboot"],
        ["validate", str(one), "--root", str(root)],
        ["diff", str(one), str(two)],
        ["plan", str(one), str(two)],
        ["plan", str(one), str(two), "--json"],
        ["recover", "--root", str(root)],
    ):
        code, out = run(*args)
        assert code in (0, 2), out
        if args[0] == "diff":  # showing a world-readable file's changes is what diff is for
            assert "MARKER-FILE" in out
            assert_clean(out, tuple(m for m in MARKERS if m != "MARKER-FILE"))
            continue
        outputs.append(out)
    # drift on a private file, then restore: reasons name the file, never its bytes
    (root / "etc/app/db.conf").write_text("password=MARKER-DB-drifted\n")
    code, out = run("validate", str(one), "--root", str(root))
    assert code == 2 and 'content mismatch for file "/etc/app/db.conf"' in out
    outputs.append(out)
    code, out = run("restore", "--root", str(root))
    assert code == 0 and "restored /etc/app/db.conf" in out
    outputs.append(out)
    # refusals of configs full of secrets: a gate refusal, and a parse error right next to one
    bad = secret_doc("rendered-worker-3", kernelArguments=["a\nb"])
    bad_file = tmp_path / "bad.json"
    bad_file.write_text(json.dumps(bad))
    torn = tmp_path / "torn.yaml"
    torn.write_text("kind: MachineConfig\nspec:\n  config: {pull: MARKER-PULL, [\n")
    for source in (bad_file, torn):
        code, out = run("once-from", str(source), "--root", str(root), "--skip-reboot")
        assert code in (1, 2) and out.strip(), out
        outputs.append(out)
    assert "at line 4, column 1" in outputs[-1]
    for out in outputs:
        assert_clean(out)


def test_every_state_file_is_private_and_old_modes_are_fixed(tmp_path: Path) -> None:
    root = tmp_path / "root"
    make_root(root)
    (root / "run/ostree-booted").unlink()
    state = root / "etc/machine-config-daemon"
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    one.write_text(json.dumps(secret_doc("rendered-worker-1")))
    two.write_text(json.dumps(secret_doc("rendered-worker-2", app="threads=8\n")))
    assert run("once-from", str(one), "--root", str(root), "--skip-reboot")[0] == 0
    current = root / CURRENT_CONFIG_PATH.lstrip("/")
    assert mode(current) == 0o600
    assert mode(state) == 0o711
    for sub in ("orig", "noorig"):
        if (state / sub).exists():
            assert mode(state / sub) == 0o700
    # an update killed half-way leaves its journal: private too
    env = {**os.environ, "MCD_CRASH_AT": "files", "PATH": f"{BIN}:{os.environ['PATH']}"}
    cmd = [sys.executable, "-m", "mcd", "once-from", str(two), "--root", str(root), "--skip-reboot"]
    killed = subprocess.run(cmd, check=False, env=env, capture_output=True, text=True, timeout=99)
    assert killed.returncode == -9, killed.stderr
    for path in (JOURNAL, OLD_DOC, NEW_DOC):
        assert mode(root / path.lstrip("/")) == 0o600, path
    assert_clean(killed.stdout + killed.stderr)
    # an older version left them world-readable: the next start seals them
    for path in (JOURNAL, OLD_DOC, NEW_DOC, CURRENT_CONFIG_PATH):
        (root / path.lstrip("/")).chmod(0o644)
    state.chmod(0o755)
    code, out = run("once-from", str(two), "--root", str(root), "--skip-reboot")
    assert code == 0, out
    assert "finished an interrupted update rendered-worker-1 -> rendered-worker-2" in out
    assert mode(current) == 0o600 and mode(state) == 0o711
    assert_clean(out)
