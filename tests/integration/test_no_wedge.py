"""No wedged node (issue 14, item 4).

Any exception in an update step rolls back; the rollback leaves alone what the update
did not change; a failure inside the rollback leaves a journal the next run finishes;
an unreadable journal or ``currentconfig`` is one clear line naming the file and the
way out (``mcd recover``), the same on every run, and ``mcd recover`` gets the node
going again.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from mcd.agent.commands.once import once_from
from mcd.agent.update.handles import Node
from mcd.agent.update.journal import JOURNAL, NEW_DOC, OLD_DOC, RECOVERY
from mcd.agent.update.transaction import UpdateError
from mcd.cli import cli
from mcd.host.effects import HostEffects
from mcd.host.rootfs import Root
from mcd.model.vocabulary import CURRENT_CONFIG_PATH
from tests.builders import file_entry, mc_doc
from tests.e2e.harness import BIN, make_root
from tests.fakes.memory_systemd import MemorySystemd
from tests.integration.test_bad_corpus import snapshot

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBaseKey core@base"
KEY2 = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINewKey core@new"


def doc(name: str, app: str, key: str = KEY, extra: str = "same\n") -> dict[str, Any]:
    files = [file_entry("/etc/app.conf", app), file_entry("/etc/untouched.conf", extra)]
    return mc_doc(name, files=files, users=[{"name": "core", "sshAuthorizedKeys": [key]}])


def write(tmp: Path, document: dict[str, Any]) -> Path:
    path = tmp / f"{document['metadata']['name']}.json"
    path.write_text(json.dumps(document))
    return path


def run(*args: str) -> tuple[int, str, list[str]]:
    env = {"PATH": f"{BIN}:{os.environ['PATH']}", "MCD_TEST_PYTHON": sys.executable}
    result = CliRunner().invoke(cli, list(args), env=env)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    return result.exit_code, result.stdout, errors


@pytest.fixture
def node(tmp_path: Path) -> tuple[Path, Node]:
    root = tmp_path / "root"
    make_root(root)
    (root / "run/ostree-booted").unlink()  # a plain host: no OS step
    host = Node(Root(root), HostEffects(Root(root), MemorySystemd(root)))
    once_from(str(write(tmp_path, doc("rendered-worker-1", "one\n"))), host, skip_reboot=True)
    return root, host


def test_any_exception_in_a_step_rolls_back_and_leaves_untouched_files_alone(
    node: tuple[Path, Node], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, host = node
    untouched = root / "etc/untouched.conf"
    inode = untouched.stat().st_ino

    real_keys = host.effects.update_ssh_keys
    calls: list[int] = []

    def broken(users: Any) -> bool:
        calls.append(1)
        if len(calls) == 1:  # the forward step; the rollback's call works
            raise ValueError("a bug in the passwd step")
        return real_keys(users)

    monkeypatch.setattr(host.effects, "update_ssh_keys", broken)
    new = write(tmp_path, doc("rendered-worker-2", "two\n", key=KEY2))
    with pytest.raises(UpdateError) as failed:
        once_from(str(new), host, skip_reboot=True)
    assert str(failed.value) == "unexpected ValueError: a bug in the passwd step"
    assert (root / "etc/app.conf").read_text() == "one\n"  # rolled back
    assert untouched.stat().st_ino == inode  # never rewritten, neither forward-undone
    assert not (root / JOURNAL.lstrip("/")).exists()


def test_a_failure_inside_the_rollback_leaves_a_journal_the_next_run_finishes(
    node: tuple[Path, Node], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, host = node
    real_write = host.effects.write_files
    calls = []

    def flaky(files: Any, **kw: Any) -> int:
        calls.append(1)
        if len(calls) == 2:  # the rollback's write
            raise OSError(5, "Input/output error")
        return real_write(files, **kw)

    real_keys = host.effects.update_ssh_keys
    key_calls: list[int] = []

    def broken(users: Any) -> bool:
        key_calls.append(1)
        if len(key_calls) == 1:
            raise RuntimeError("boom")
        return real_keys(users)

    monkeypatch.setattr(host.effects, "write_files", flaky)
    monkeypatch.setattr(host.effects, "update_ssh_keys", broken)
    new = write(tmp_path, doc("rendered-worker-2", "two\n", key=KEY2))
    with pytest.raises(UpdateError) as failed:
        once_from(str(new), host, skip_reboot=True)
    assert str(failed.value) == (
        "unexpected RuntimeError: boom; error rolling back files: [Errno 5] Input/output error"
    )
    entry = json.loads((root / JOURNAL.lstrip("/")).read_text())
    assert entry["phase"] == "rolling-back"
    monkeypatch.undo()
    code, out, errors = run("recover", "--finish", "--root", str(root))
    assert (code, errors) == (0, [])
    assert out.strip() == (
        "finished the interrupted update rendered-worker-1 -> rendered-worker-2: rolled-back"
    )
    assert (root / "etc/app.conf").read_text() == "one\n"


CORRUPT = [
    ("truncated", JOURNAL, b'{"old": "rendered-worker-1", "new": "rendered-w',
     f"corrupt update journal {JOURNAL}: not valid JSON at line 1, column 37; {RECOVERY}"),
    ("empty", JOURNAL, b"", f"corrupt update journal {JOURNAL}: the file is empty; {RECOVERY}"),
    ("unknown-phase", JOURNAL, b'{"old": "a", "new": "b", "phase": "dancing"}',
     f"corrupt update journal {JOURNAL}: field phase is not a known phase; {RECOVERY}"),
    ("wrong-type", JOURNAL, b'{"old": "a", "new": "b", "phase": "applying", "done": "files"}',
     f"corrupt update journal {JOURNAL}: field done is not a list; {RECOVERY}"),
    ("not-an-object", JOURNAL, b"[1, 2]",
     f"corrupt update journal {JOURNAL}: not a JSON object; {RECOVERY}"),
    ("doc-corrupt", NEW_DOC, b"{not: [json",
     f"corrupt update journal: {NEW_DOC}: not valid YAML or JSON: while parsing a flow "
     f"sequence: expected ',' or ']', but got '<stream end>' at line 1, column 12; {RECOVERY}"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "path", "data", "reason"), CORRUPT, ids=[c[0] for c in CORRUPT])
def test_a_corrupt_journal_is_one_clear_line_every_time_until_recovered(
    node: tuple[Path, Node], tmp_path: Path, case: str, path: str, data: bytes, reason: str
) -> None:
    root, _ = node
    state = root / "etc/machine-config-daemon"
    (state / "transaction-old.json").write_bytes((state / "currentconfig").read_bytes())
    (state / "transaction-new.json").write_bytes((state / "currentconfig").read_bytes())
    entry = {"old": "rendered-worker-1", "new": "rendered-worker-1", "phase": "applying"}
    (root / JOURNAL.lstrip("/")).write_text(json.dumps(entry))
    (root / path.lstrip("/")).write_bytes(data)
    for planted in (JOURNAL, OLD_DOC, NEW_DOC):  # as mcd writes them (else the start seals them)
        (root / planted.lstrip("/")).chmod(0o600)
    new = write(tmp_path, doc("rendered-worker-2", "two\n"))
    before = snapshot(root)
    for _ in range(2):  # the same line, not a traceback, on every run
        code, _, errors = run("once-from", str(new), "--root", str(root), "--skip-reboot")
        assert (code, errors) == (1, [f"error: {reason}"])
    assert snapshot(root) == before
    code, out, _ = run("recover", "--root", str(root))
    assert code == 1 and f"journal: {reason}" in out.splitlines()
    code, out, errors = run("recover", "--abandon", "--root", str(root))
    assert code == 0 and out.startswith("abandoned the interrupted update (kept as ")
    assert (root / (JOURNAL + ".abandoned").lstrip("/")).exists()
    code, out, errors = run("once-from", str(new), "--root", str(root), "--skip-reboot")
    assert (code, errors) == (0, [])
    assert (root / "etc/app.conf").read_text() == "two\n"


def test_a_journal_without_its_documents_is_named(node: tuple[Path, Node], tmp_path: Path) -> None:
    root, _ = node
    entry = {"old": "a", "new": "b", "phase": "applying"}
    (root / JOURNAL.lstrip("/")).write_text(json.dumps(entry))
    code, _, errors = run("once-from", str(write(tmp_path, doc("w-3", "3\n"))), "--root", str(root))
    assert (code, errors) == (
        1, [f"error: incomplete update journal: {OLD_DOC}: No such file or directory; {RECOVERY}"]
    )  # fmt: skip


def test_a_corrupt_currentconfig_is_named_and_recover_current_repairs_it(
    node: tuple[Path, Node], tmp_path: Path
) -> None:
    root, _ = node
    current = root / CURRENT_CONFIG_PATH.lstrip("/")
    good = current.read_bytes()
    current.write_bytes(b"\x00\x01 garbage")
    new = write(tmp_path, doc("rendered-worker-2", "two\n"))
    code, _, errors = run("once-from", str(new), "--root", str(root), "--skip-reboot")
    assert code == 1
    assert errors == [
        f"error: corrupt state file {CURRENT_CONFIG_PATH}: not valid YAML or JSON: special "
        "characters are not allowed (U+0000) at line 1, column 1; if the node is on a known rendered "
        "config, write it back with `mcd recover --current CONFIG`"
    ]
    saved = tmp_path / "saved.json"
    saved.write_bytes(good)
    code, out, errors = run("recover", "--current", str(saved), "--root", str(root))
    assert (code, errors) == (0, [])
    assert out.strip() == f"wrote {saved} (rendered-worker-1) as {CURRENT_CONFIG_PATH}"
    assert current.read_bytes() == good
    assert oct(current.stat().st_mode & 0o777) == "0o600"
    code, _, errors = run("recover", "--current", str(saved), "--root", str(root))
    assert errors == [
        f"error: {CURRENT_CONFIG_PATH} is readable (config rendered-worker-1); refusing to "
        "replace it"
    ]
    code, _, errors = run("once-from", str(new), "--root", str(root), "--skip-reboot")
    assert (code, errors) == (0, [])
