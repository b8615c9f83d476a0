"""Refuse before writing what cannot be written or undone (issue 28): an immutable or
append-only target (``chattr +i`` / ``+a``), or its directory, is found in the preflight and
refused in one line naming it, with nothing written; a journal that cannot be written (a full
state directory: a real 64 KiB tmpfs where this machine allows mounting one inside a temp
dir, else ``ENOSPC`` injected at the write) leaves nothing behind and names the state
directory, not the input."""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcd.agent.update import failpoints
from mcd.cli import cli
from tests.builders import file_entry, mc_doc
from tests.faults.test_fault_matrix import small_tmpfs
from tests.integration.helpers.tree import differences, snapshot

UNIT = "[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n"
OLD = mc_doc("rendered-worker-1", files=[file_entry("/etc/app/a.conf", "a=1\n"),
                                         file_entry("/etc/app/same.conf", "same\n")])  # fmt: skip
NEW = mc_doc("rendered-worker-2",
             files=[file_entry("/etc/app/a.conf", "a=2\n"), file_entry("/etc/app/same.conf", "same\n"),
                    file_entry("/etc/app/conf.d/new.conf", "new\n")],
             units=[{"name": "app.service", "contents": UNIT, "enabled": True}])  # fmt: skip


def once(tmp: Path, root: Path, doc: dict[str, object]) -> tuple[int, str, str]:
    path = tmp / f"{doc['metadata']['name']}.json"  # type: ignore[index]
    path.write_text(json.dumps(doc))
    result = CliRunner().invoke(cli, ["once-from", str(path), "--root", str(root), "--skip-reboot"],
                                env={"NO_COLOR": "1"})  # fmt: skip
    assert "Traceback" not in result.stderr
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    code, _, err = once(tmp_path, root, OLD)
    assert code == 0, err
    return root


@contextlib.contextmanager
def chattr(flag: str, *paths: Path) -> Iterator[None]:
    done: list[Path] = []
    try:
        for path in paths:
            result = subprocess.run(
                ["chattr", f"+{flag}", str(path)], capture_output=True, check=False
            )
            if result.returncode != 0:
                pytest.skip(f"chattr +{flag} is not allowed here: {result.stderr.decode().strip()}")
            done.append(path)
        yield
    finally:
        for path in done:
            subprocess.run(["chattr", f"-{flag}", str(path)], check=False)


if shutil.which("chattr") is None:
    pytestmark = pytest.mark.skip(reason="chattr (e2fsprogs) is not installed")


@pytest.mark.parametrize(
    ("flag", "target", "why"),
    [
        ("i", "etc/app/a.conf", '"/etc/app/a.conf": it is immutable (chattr +i)'),
        ("a", "etc/app/a.conf", '"/etc/app/a.conf": it is append-only (chattr +a)'),
        ("i", "etc/app", '"/etc/app/a.conf": its directory "/etc/app" is immutable (chattr +i)'),
    ],
)
def test_an_unchangeable_target_is_refused_in_the_preflight_with_nothing_written(
    tmp_path: Path, root: Path, flag: str, target: str, why: str
) -> None:
    before = snapshot(root)
    with chattr(flag, root / target):
        code, out, err = once(tmp_path, root, NEW)
    assert code == 1 and out == ""
    assert err == f"error: refusing to write {why}; nothing was written\n"
    assert differences(before, snapshot(root)) == []


def test_an_immutable_file_neither_config_changes_is_left_alone(tmp_path: Path, root: Path) -> None:
    with chattr("i", root / "etc/app/same.conf"):
        code, out, err = once(tmp_path, root, NEW)
    assert code == 0, err
    assert out.startswith("reboot-pending: rendered-worker-2 applied")
    assert (root / "etc/app/a.conf").read_text() == "a=2\n"


BIG = mc_doc("rendered-worker-2", files=[file_entry("/etc/app/a.conf", "a=2\n"),
                                         file_entry("/etc/app/same.conf", "same\n"),
                                         file_entry("/etc/app/big.bin", "x" * 120_000)])  # fmt: skip
JOURNAL_FULL = (
    "error: cannot write the update journal in /etc/machine-config-daemon: "
    "No space left on device; nothing was changed\n"
)


@pytest.mark.parametrize("how", ["tmpfs", "injected"])
def test_a_full_state_directory_leaves_no_journal_and_names_it(
    tmp_path: Path, root: Path, how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = root / "etc/machine-config-daemon"
    with small_tmpfs(state) if how == "tmpfs" else contextlib.nullcontext(False) as mounted:
        if how == "tmpfs" and not mounted:
            pytest.skip("mounting a tmpfs is not allowed here (the injected case covers it)")
        if how == "injected":
            monkeypatch.setenv(failpoints.ENOSPC_ENV, "journal:transaction-new.json")
        before = snapshot(root)
        code, out, err = once(tmp_path, root, BIG)
        after = snapshot(root)
    assert code == 1 and out == ""
    assert err == JOURNAL_FULL
    assert differences(before, after) == []  # no transaction-old.json, no temp file, nothing
    monkeypatch.delenv(failpoints.ENOSPC_ENV, raising=False)
    code, _, err = once(tmp_path, root, BIG)  # the space is back
    assert code == 0, err


def test_a_journal_that_cannot_be_saved_mid_update_still_rolls_back(
    tmp_path: Path, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = snapshot(root)
    monkeypatch.setenv(failpoints.ENOSPC_ENV, "journal:save")
    code, out, err = once(tmp_path, root, NEW)
    assert code == 1 and out == ""
    assert "cannot write the update journal in /etc/machine-config-daemon" in err
    assert err.count("\n") == 1
    assert differences(before, snapshot(root)) == []
