"""On-disk validation under a root directory (reference 3.1), in temp dirs only."""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from mcd.host.errors import PathEscapeError
from mcd.host.ondisk.validation import validate_on_disk
from mcd.host.rootfs import Root
from mcd.model.ignition.dataurl import encode_data_url
from mcd.model.machineconfig import MachineConfig, load_machine_config
from tests.builders import file_entry, mc, mc_doc

UNIT = "[Service]\nExecStart=/bin/true\n"
SECRET = b"super-secret-pull-secret\n"


def config() -> object:
    return mc(
        "rendered-worker-1",
        files=[
            file_entry("/etc/foo", "hello\n"),
            file_entry("/etc/secret.json", SECRET, mode=0o600),
            {"path": "/etc/compressed", "mode": 420,
             "contents": {"source": encode_data_url(b"zipped\n", compress=True),
                          "compression": "gzip"}},
            file_entry("/etc/kubernetes/kubelet-ca.crt", "ignored"),
        ],
        units=[
            {"name": "a.service", "contents": UNIT,
             "dropins": [{"name": "10-a.conf", "contents": "[Service]\n"}, {"name": "20-empty.conf"}]},
            {"name": "masked.service", "mask": True, "contents": "[Unit]\n"},
            {"name": "nocontent.service", "enabled": True},
        ],
    )  # fmt: skip


def write(root: Path, path: str, data: bytes | str, mode: int = 0o644) -> None:
    target = root / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data.encode() if isinstance(data, str) else data)
    os.chmod(target, mode)


@pytest.fixture
def node(tmp_path: Path) -> Path:
    write(tmp_path, "/etc/foo", "hello\n")
    write(tmp_path, "/etc/secret.json", SECRET, 0o600)
    write(tmp_path, "/etc/compressed", gzip.decompress(gzip.compress(b"zipped\n")))
    write(tmp_path, "/etc/systemd/system/a.service", UNIT)
    write(tmp_path, "/etc/systemd/system/a.service.d/10-a.conf", "[Service]\n")
    os.symlink("/dev/null", tmp_path / "etc/systemd/system/masked.service")
    return tmp_path


def reasons(node: Path) -> list[str]:
    return validate_on_disk(config(), Root(node)).reasons()  # type: ignore[arg-type]


def test_matching_node(node: Path) -> None:
    report = validate_on_disk(config(), Root(node))  # type: ignore[arg-type]
    assert report.ok, report.reasons()
    assert report.files_checked == 3  # kubelet-ca.crt is the certificate writer's


def test_content_mismatch_upstream_wording(node: Path) -> None:
    write(node, "/etc/foo", "HELLO\n")
    assert reasons(node) == [
        "unexpected on-disk state validating against rendered-worker-1: "
        'content mismatch for file "/etc/foo"'
    ]


def test_mode_mismatch_upstream_wording(node: Path) -> None:
    os.chmod(node / "etc/foo", 0o755)
    assert reasons(node) == [
        "unexpected on-disk state validating against rendered-worker-1: "
        'mode mismatch for file: "/etc/foo"; expected: -rw-r--r--/420/0644; '
        "received: -rwxr-xr-x/493/0755"
    ]


def test_symlink_in_place_of_file_is_a_mode_mismatch(node: Path) -> None:
    (node / "etc/foo").unlink()
    os.symlink("/etc/secret.json", node / "etc/foo")
    (reason,) = reasons(node)
    assert (
        'mode mismatch for file: "/etc/foo"; expected: -rw-r--r--/420/0644; received: L' in reason
    )


def test_every_mismatch_is_reported_and_no_contents_leak(node: Path) -> None:
    write(node, "/etc/secret.json", b"tampered-secret\n", 0o600)
    (node / "etc/compressed").unlink()
    write(node, "/etc/systemd/system/a.service.d/20-empty.conf", "x")
    (node / "etc/systemd/system/masked.service").unlink()
    write(node, "/etc/systemd/system/masked.service", "[Unit]\n")
    found = reasons(node)
    assert len(found) == 4, found
    text = "\n".join(found)
    assert 'content mismatch for file "/etc/secret.json"' in text
    assert (
        'could not stat file "/etc/compressed": lstat /etc/compressed: no such file or directory'
        in text
    )
    assert 'content mismatch for file "/etc/systemd/system/a.service.d/20-empty.conf"' in text
    assert "invalid unit masked setting" in text
    assert "secret" not in text.replace("/etc/secret.json", "")


def test_parent_symlink_inside_root_is_followed(node: Path) -> None:
    real = node / "usr/etc"
    real.mkdir(parents=True)
    os.rename(node / "etc/foo", real / "foo")
    os.mkdir(node / "etc2")
    cfg = mc("rendered-worker-1", files=[file_entry("/etc2/link/foo", "hello\n")])
    os.symlink("/usr/etc", node / "etc2/link")  # absolute target: inside the root
    assert validate_on_disk(cfg, Root(node)).ok


def test_parent_symlink_escaping_root_is_refused(tmp_path: Path) -> None:
    node = tmp_path / "root"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "foo").write_text("hello\n")
    os.chmod(outside / "foo", 0o644)
    (node / "etc").mkdir(parents=True)
    os.symlink("../../outside", node / "etc/escape")
    cfg = mc("rendered-worker-1", files=[file_entry("/etc/escape/foo", "hello\n")])
    report = validate_on_disk(cfg, Root(node))
    assert not report.ok
    assert 'could not stat file "/etc/escape/foo"' in report.reasons()[0]
    with pytest.raises(PathEscapeError):
        Root(node).read_bytes("/etc/escape/foo")


def test_absolute_symlink_stays_in_root(tmp_path: Path) -> None:
    # /etc/passwd of the agent must never be read: "/etc" in a node symlink means <root>/etc.
    node = tmp_path / "root"
    (node / "etc").mkdir(parents=True)
    os.symlink("/etc", node / "etc/hostetc")
    assert Root(node).resolve("/etc/hostetc/passwd") == "/etc/passwd"
    assert not Root(node).exists("/etc/hostetc/passwd")


def masks_config() -> MachineConfig:
    return load_machine_config(
        json.dumps(
            mc_doc(
                "rendered-masks",
                units=[
                    {"name": "off.service", "mask": True},  # no contents: upstream skips it
                    {"name": "back.service", "mask": False},
                ],
            )
        )
    )


@pytest.mark.parametrize(
    ("tamper", "expected"),
    [
        (
            lambda root: (root / "etc/systemd/system/off.service").unlink(),
            'state validation: error while evaluation symlink for path "/etc/systemd/system/'
            'off.service"',
        ),
        (
            lambda root: (
                (root / "etc/systemd/system/off.service").unlink(),
                (root / "etc/systemd/system/off.service").write_text("[Service]\n"),
            ),
            'state validation: invalid unit masked setting. path: "/etc/systemd/system/'
            'off.service"; expected: /dev/null; received: /etc/systemd/system/off.service',
        ),
        (
            lambda root: os.symlink("/dev/null", root / "etc/systemd/system/back.service"),
            'state validation: invalid unit masked setting. path: "/etc/systemd/system/'
            'back.service"; expected: not masked; received: /dev/null',
        ),
    ],
    ids=["mask-deleted", "mask-replaced", "unmask-undone"],
)
def test_masks_are_validated_without_contents(
    tmp_path: Path, tamper: Callable[[Path], object], expected: str
) -> None:
    (tmp_path / "etc/systemd/system").mkdir(parents=True)
    os.symlink("/dev/null", tmp_path / "etc/systemd/system/off.service")
    assert validate_on_disk(masks_config(), Root(tmp_path)).ok
    tamper(tmp_path)
    found = validate_on_disk(masks_config(), Root(tmp_path)).reasons()
    assert len(found) == 1 and found[0].startswith(
        f"unexpected on-disk state validating against rendered-masks: {expected}"
    ), found


class _States:
    """Unit file states as systemd reports them; ``broken`` fails the call."""

    def __init__(self, states: dict[str, str], broken: str = "") -> None:
        self.states, self.broken = states, broken
        self.asked: list[str] = []

    def unit_file_state(self, unit: str) -> str:
        self.asked.append(unit)
        if unit == self.broken:
            raise RuntimeError(f"no reply for {unit}")
        return self.states.get(unit, "not-found")


def _enabled_config() -> MachineConfig:
    return mc(
        "rendered-worker-1",
        files=[file_entry("/etc/foo", "hello\n")],
        units=[
            {"name": "a.service", "contents": UNIT, "enabled": True},
            {"name": "b.service", "contents": UNIT, "enabled": False},
        ],
    )


def test_enablement_asked_while_files_are_read(tmp_path: Path) -> None:
    """The states are asked ahead of the file checks; the report reads as before."""
    write(tmp_path, "/etc/foo", "HELLO\n")
    write(tmp_path, "/etc/systemd/system/a.service", UNIT)
    write(tmp_path, "/etc/systemd/system/b.service", UNIT)
    states = _States({"a.service": "disabled", "b.service": "disabled"})
    report = validate_on_disk(_enabled_config(), Root(tmp_path), states)
    assert report.reasons() == [
        "unexpected on-disk state validating against rendered-worker-1: "
        'content mismatch for file "/etc/foo"',
        "unexpected on-disk state validating against rendered-worker-1: "
        'unit "a.service" expected enabled=true, but systemd reports "disabled"',
    ]
    assert sorted(states.asked) == ["a.service", "b.service"]


def test_a_failed_state_query_fails_the_validation(tmp_path: Path) -> None:
    write(tmp_path, "/etc/foo", "hello\n")
    write(tmp_path, "/etc/systemd/system/a.service", UNIT)
    write(tmp_path, "/etc/systemd/system/b.service", UNIT)
    states = _States({"a.service": "enabled"}, broken="b.service")
    with pytest.raises(RuntimeError, match=r"no reply for b\.service"):
        validate_on_disk(_enabled_config(), Root(tmp_path), states)
