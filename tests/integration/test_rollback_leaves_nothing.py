"""A rollback leaves nothing behind (issue 28): an update failing at every point of the
transaction (a failpoint raising ENOSPC there, or the reboot request failing on a root no
systemd runs) rolls back to a root equal, byte for byte, to the one before: every path, its
type, mode, owner, link target and contents. Enablement links, dropin directories, backup
stamps and the parent directories the update created are gone."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcd.agent.update import failpoints
from mcd.cli import cli
from tests.builders import file_entry, mc_doc
from tests.integration.helpers.tree import differences, snapshot

UNIT = "[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n"
OLD = mc_doc(
    "rendered-worker-1",
    files=[file_entry("/etc/app/a.conf", "a=1\n"), file_entry("/etc/app/gone.conf", "old\n")],
    units=[{"name": "old.service", "contents": UNIT, "enabled": True},
           {"name": "kept.service", "contents": UNIT, "enabled": True,
            "dropins": [{"name": "10-old.conf", "contents": "[Service]\nNice=1\n"}]}],
    users=[{"name": "core", "sshAuthorizedKeys": ["ssh-ed25519 AAAAold"]}],
)  # fmt: skip
NEW = mc_doc(
    "rendered-worker-2",
    files=[file_entry("/etc/app/a.conf", "a=2\n"),
           file_entry("/etc/app/conf.d/deep/new.conf", "new\n"),
           file_entry("/usr/local/lib/hello/hello.sh", "#!/bin/sh\necho hi\n", mode=0o755),
           file_entry("/etc/chrony.conf", "server time.example.com iburst\n")],
    units=[{"name": "hello.service", "contents": UNIT.replace("/bin/true", "/bin/echo"),
            "enabled": True, "dropins": [{"name": "10-env.conf", "contents": "[Service]\nX=1\n"}]},
           {"name": "kept.service", "contents": UNIT + "# v2\n", "enabled": True,
            "dropins": [{"name": "20-new.conf", "contents": "[Service]\nNice=2\n"}]},
           {"name": "preset.service", "contents": UNIT},
           {"name": "bluetooth.service", "mask": True}],
    users=[{"name": "core", "sshAuthorizedKeys": ["ssh-ed25519 AAAAnew"]}],
)  # fmt: skip

POINTS = ["begin", "files:1", "files:3", "files:units", "files", "passwd", "actions", "commit"]


def once(tmp: Path, root: Path, doc: dict[str, object], *extra: str) -> tuple[int, str]:
    path = tmp / f"{doc['metadata']['name']}.json"  # type: ignore[index]
    path.write_text(json.dumps(doc))
    result = CliRunner().invoke(cli, ["once-from", str(path), "--root", str(root), *extra],
                                env={"NO_COLOR": "1"})  # fmt: skip
    assert "Traceback" not in result.stderr, result.stderr
    return result.exit_code, result.stderr


@pytest.fixture(scope="module")
def on_old(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A root on OLD, with a vendor unit (/usr/lib) and a file of the OS that NEW overwrites."""
    if shutil.which("systemctl") is None:
        pytest.skip("systemctl is not installed (enablement on an offline root)")
    tmp = tmp_path_factory.mktemp("on-old")
    root = tmp / "root"
    vendor = root / "usr/lib/systemd/system/bluetooth.service"
    vendor.parent.mkdir(parents=True)
    vendor.write_text(UNIT)
    (root / "etc").mkdir()
    (root / "etc/chrony.conf").write_text("pool 2.debian.pool.ntp.org iburst\n")
    (root / "usr/local").mkdir(parents=True)
    code, err = once(tmp, root, OLD, "--skip-reboot")
    assert code == 0, err
    return root


@pytest.mark.parametrize("point", [*POINTS, "reboot request"])
def test_a_rollback_at_every_point_leaves_the_root_as_it_was(
    point: str, on_old: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "root"
    shutil.copytree(on_old, root, symlinks=True)
    before = snapshot(root)
    if point == "reboot request":  # no systemd runs this root: the reboot cannot be asked
        code, err = once(tmp_path, root, NEW)
        assert "reboot command failed" in err, err
    else:
        monkeypatch.setenv(failpoints.ENOSPC_ENV, point)
        code, err = once(tmp_path, root, NEW, "--skip-reboot")
        assert "No space left on device" in err, err
    assert code == 1
    assert len([line for line in err.splitlines() if line.startswith("error:")]) == 1
    diff = differences(before, snapshot(root))
    assert diff == [], "\n".join([point, *diff])
