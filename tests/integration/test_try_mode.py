"""Try mode (issue 19): ``mcd once-from --try`` applies a config that reverts on its own unless
``mcd confirm`` arrives in time; the deadline outlives the command (kept in mcd's state dir,
honoured by the next command, or a systemd timer where systemd runs the host)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from click.testing import CliRunner

from mcd.agent.safety.trymode import TRY_PREVIOUS, TRY_STATE
from mcd.cli import cli
from mcd.model.vocabulary import CURRENT_CONFIG_PATH
from tests.builders import file_entry, mc_doc
from tests.e2e.harness import BIN, make_root

POLICY = "/etc/containers/policy.json"  # crio reloads it: no reboot in once-from's table


def run(*args: str) -> tuple[int, str, str]:
    env = {"PATH": f"{BIN}:{os.environ['PATH']}", "MCD_TEST_PYTHON": sys.executable}
    result = CliRunner().invoke(cli, list(args), env=env)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


def node(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    make_root(root)
    (root / "run/ostree-booted").unlink()
    write(tmp_path, "rendered-worker-1", "one\n")
    assert run("once-from", str(tmp_path / "rendered-worker-1.json"), "--root", str(root))[0] == 0
    return root


def write(tmp_path: Path, name: str, policy: str, app: str | None = None) -> Path:
    files = [file_entry(POLICY, policy)]
    if app is not None:
        files.append(file_entry("/etc/app.conf", app))
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(mc_doc(name, files=files)))
    return path


def current(root: Path) -> str:
    return str(json.loads((root / CURRENT_CONFIG_PATH.lstrip("/")).read_text())["metadata"]["name"])


def expire(root: Path) -> None:
    """The deadline passes (the state file's deadline moved into the past)."""
    path = root / TRY_STATE.lstrip("/")
    state = json.loads(path.read_text())
    state["deadline"] -= 7200
    path.write_text(json.dumps(state))


def test_a_try_confirmed_in_time_stays(tmp_path: Path) -> None:
    root = node(tmp_path)
    code, out, _ = run("once-from", "--try", "1h", str(write(tmp_path, "rendered-worker-2", "two\n")),
                       "--root", str(root))  # fmt: skip
    assert code == 0 and "trying rendered-worker-2: reverts in 1h unless `mcd confirm`" in out
    assert (root / POLICY.lstrip("/")).read_text() == "two\n"
    assert (root / TRY_PREVIOUS.lstrip("/")).stat().st_mode & 0o077 == 0
    code, out, _ = run("confirm", "--root", str(root))
    assert (code, out) == (0, "confirmed: rendered-worker-2 stays\n")
    assert not (root / TRY_STATE.lstrip("/")).exists()
    expire_never = run("try-revert", "--root", str(root))
    assert expire_never == (0, "nothing to revert: no try is pending\n", "")
    assert current(root) == "rendered-worker-2"
    assert (root / POLICY.lstrip("/")).read_text() == "two\n"


def test_an_unconfirmed_try_reverts_at_its_deadline(tmp_path: Path) -> None:
    root = node(tmp_path)
    source = write(tmp_path, "rendered-worker-2", "two\n")
    assert run("once-from", "--try", "10m", str(source), "--root", str(root))[0] == 0
    code, out, _ = run("try-revert", "--root", str(root))  # what the timer runs: not yet due
    assert code == 0 and out.startswith("trying rendered-worker-2: reverts to rendered-worker-1")
    assert current(root) == "rendered-worker-2"
    expire(root)
    code, out, _ = run("try-revert", "--root", str(root))
    assert (code, out) == (0, "reverted the try of rendered-worker-2 to rendered-worker-1 "
                              "(not confirmed in time): done\n")  # fmt: skip
    assert current(root) == "rendered-worker-1"
    assert (root / POLICY.lstrip("/")).read_text() == "one\n"
    assert not (root / TRY_STATE.lstrip("/")).exists()
    assert not (root / TRY_PREVIOUS.lstrip("/")).exists()


def test_a_confirm_after_the_deadline_is_too_late_and_reverts(tmp_path: Path) -> None:
    root = node(tmp_path)
    assert run("once-from", "--try", "90s", str(write(tmp_path, "rendered-worker-2", "two\n")),
               "--root", str(root))[0] == 0  # fmt: skip
    expire(root)
    code, _, err = run("confirm", "--root", str(root))
    assert code == 1 and "too late to confirm: reverted the try of rendered-worker-2" in err
    assert current(root) == "rendered-worker-1"


def test_the_next_once_from_honours_a_passed_deadline_first(tmp_path: Path) -> None:
    root = node(tmp_path)
    assert run("once-from", "--try", "90s", str(write(tmp_path, "rendered-worker-2", "two\n")),
               "--root", str(root))[0] == 0  # fmt: skip
    code, _, err = run("once-from", str(write(tmp_path, "rendered-worker-3", "three\n")),
                       "--root", str(root))  # fmt: skip
    assert code == 1 and "trying rendered-worker-2" in err and "`mcd confirm` or" in err
    assert current(root) == "rendered-worker-2"  # a pending try is never overwritten
    expire(root)
    assert run("once-from", str(tmp_path / "rendered-worker-3.json"), "--root", str(root))[0] == 0
    assert current(root) == "rendered-worker-3"
    assert not (root / TRY_STATE.lstrip("/")).exists()


def test_a_try_that_needs_a_reboot_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    root = node(tmp_path)
    source = write(tmp_path, "rendered-worker-2", "one\n", app="x\n")  # /etc/app.conf reboots
    code, _, err = run("once-from", "--try", "5m", str(source), "--root", str(root))
    assert code == 1
    assert "--try: this change needs a reboot; add --skip-reboot to try it" in err
    assert not (root / "etc/app.conf").exists()
    assert not (root / TRY_STATE.lstrip("/")).exists()
    assert current(root) == "rendered-worker-1"
    code, _, err = run("once-from", "--try", "soon", str(source), "--root", str(root))
    assert code == 64 and "Invalid value for '--try': invalid duration 'soon'" in err


def test_once_from_runs_the_gate_on_an_offline_root_and_rolls_back(tmp_path: Path) -> None:
    root = node(tmp_path)
    check = root / "etc/mcd/health.d/required.d/10-probe"
    check.parent.mkdir(parents=True)
    check.write_text('#!/bin/sh\necho "probe: $MCD_ROOT"\nexit 4\n')
    check.chmod(0o755)
    code, _, err = run("once-from", str(write(tmp_path, "rendered-worker-2", "two\n")),
                       "--root", str(root))  # fmt: skip
    assert code == 1
    assert (
        "health gate failed after update to rendered-worker-2: check required.d/10-probe failed: "
        f"exit status 4: probe: {root}; rolled back to rendered-worker-1"
    ) in err
    assert (root / POLICY.lstrip("/")).read_text() == "one\n"
    assert current(root) == "rendered-worker-1"
    verdict = json.loads((root / "etc/machine-config-daemon/health-gate.json").read_text())
    notes = {c["name"]: (c["status"], c["note"]) for c in verdict["checks"]}
    assert notes["units"] == ("skipped", "the config enables no units")
    (root / "etc/mcd/health.conf").write_text("enabled = false  # the admin turns it off\n")
    assert run("once-from", str(tmp_path / "rendered-worker-2.json"), "--root", str(root))[0] == 0
    assert current(root) == "rendered-worker-2"
    (root / "etc/mcd/health.conf").write_text("timeout = soon\n")
    code, _, err = run("once-from", str(tmp_path / "rendered-worker-1.json"), "--root", str(root))
    assert code != 0
    assert "/etc/mcd/health.conf: timeout: want seconds between 0 and 86400, have 'soon'" in err
    assert current(root) == "rendered-worker-2"
