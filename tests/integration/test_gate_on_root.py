"""The gate's second half on a root shaped like RHCOS (issue 14, item 2).

The root has RHCOS's real top-level symlinks (``/var/run -> ../run``, ``/home ->
var/home``, ``/lib -> usr/lib``, ``/usr/local -> ../var/usrlocal``, ...). A clean
path that lands, through them, on something a guard forbids is refused with the
field, the spelling and the landing place, and the root does not change; a path
that lands somewhere allowed is written where it lands.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcd.agent.commands.once import once_from
from mcd.agent.update.handles import Node
from mcd.agent.update.transaction import Outcome, UpdateError
from mcd.host.effects import HostEffects
from mcd.host.rootfs import Root
from mcd.model.errors import ConfigError
from mcd.model.ignition.guards import RHCOS_TOPLEVEL_LINKS
from mcd.model.planning.applicability import COREOS  # (no rpm-ostree client here)
from mcd.model.vocabulary import CURRENT_CONFIG_PATH
from tests.builders import file_entry, mc_doc
from tests.e2e.harness import IMAGE_A, make_root
from tests.fakes.memory_systemd import MemorySystemd
from tests.integration.helpers.rhcos import make_rhcos_links
from tests.integration.test_bad_corpus import snapshot

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBaseKey core@base"
UNIT = "[Service]\nExecStart=/bin/true\n"


def doc(name: str, files: list[dict[str, Any]]) -> dict[str, Any]:
    return mc_doc(
        name, files=files, users=[{"name": "core", "sshAuthorizedKeys": [KEY]}],
        units=[{"name": "app.service", "contents": UNIT}], osImageURL=IMAGE_A,
    )  # fmt: skip


def apply(root: Path, document: dict[str, Any]) -> Outcome:
    source = root.parent / f"{document['metadata']['name']}.json"
    source.write_text(json.dumps(document))
    node = Node(Root(root), HostEffects(Root(root), MemorySystemd(root)), host_support=COREOS)
    return once_from(str(source), node, skip_reboot=True)


@pytest.fixture(scope="module")
def rhcos(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("rhcos") / "root"
    make_root(root)
    make_rhcos_links(root)
    apply(root, doc("rendered-worker-1", [file_entry("/etc/app.conf", "a\n")]))
    assert (root / "var/home/core/.ssh/authorized_keys.d/ignition").read_text().strip() == KEY
    return root


@pytest.fixture
def node(rhcos: Path, tmp_path: Path) -> Path:
    root = tmp_path / "root"
    shutil.copytree(rhcos, root, symlinks=True)
    return root


FIELD = "spec.config.storage.files[1].path"
CASES = [
    ("/var/run/machine-config-daemon-force",
     f'{FIELD}: "/var/run/machine-config-daemon-force" resolves to '
     '"/run/machine-config-daemon-force" on this node: cannot create '
     "/run/machine-config-daemon-force via Ignition"),
    ("/var/home/core/.ssh/authorized_keys",
     f'{FIELD}: "/var/home/core/.ssh/authorized_keys" is "/home/core/.ssh/authorized_keys" on '
     'this node: "/home/core/.ssh/authorized_keys" conflicts with the SSH keys of user core '
     "(set passwd.users[].sshAuthorizedKeys)"),
    ("/var/home/core/.ssh/authorized_keys.d/ignition",
     f'{FIELD}: "/var/home/core/.ssh/authorized_keys.d/ignition" is '
     '"/home/core/.ssh/authorized_keys.d/ignition" on this node: '
     '"/home/core/.ssh/authorized_keys.d/ignition" conflicts with the SSH keys of '
     "user core (set passwd.users[].sshAuthorizedKeys)"),
    ("/lib/systemd/system/evil.service",
     f'{FIELD}: "/lib/systemd/system/evil.service" resolves to '
     '"/usr/lib/systemd/system/evil.service" on this node: is on the read-only /usr of an '
     "ostree system (only /usr/local is writable)"),
    ("/bin/kubelet",
     f'{FIELD}: "/bin/kubelet" resolves to "/usr/bin/kubelet" on this node: is on the '
     "read-only /usr of an ostree system (only /usr/local is writable)"),
    ("/var/run/machine-config-daemon.lock",
     f'{FIELD}: "/var/run/machine-config-daemon.lock" resolves to '
     '"/run/machine-config-daemon.lock" on this node: path "/run/machine-config-daemon.lock" '
     "is mcd's own state (/run/machine-config-daemon.lock)"),
]  # fmt: skip


@pytest.mark.parametrize(("path", "reason"), CASES, ids=[c[0] for c in CASES])
def test_a_path_landing_on_a_guarded_place_is_refused(node: Path, path: str, reason: str) -> None:
    before = snapshot(node.parent)
    bad = doc("rendered-worker-2", [file_entry("/etc/app.conf", "a\n"), file_entry(path, "x")])
    with pytest.raises(UpdateError) as refused:
        apply(node, bad)
    assert str(refused.value) == reason
    assert snapshot(node.parent) == {**before, **_sources(node.parent, before)}


def _sources(top: Path, before: dict[str, Any]) -> dict[str, Any]:
    """The config files the test itself wrote beside the root."""
    after = snapshot(top)
    return {k: v for k, v in after.items() if k.endswith(".json") and k not in before}


def test_two_entries_landing_on_one_file_are_refused(node: Path) -> None:
    files = [file_entry("/etc/app.conf", "a\n"), file_entry("/home/core/notes", "1"),
             file_entry("/var/home/core/notes", "2")]  # fmt: skip
    with pytest.raises(UpdateError) as refused:
        apply(node, doc("rendered-worker-2", files))
    assert str(refused.value) == (
        'spec.config.storage.files[2].path: "/var/home/core/notes" is the same file as '
        'storage.files[1] ("/home/core/notes")'
    )
    assert not (node / "var/home/core/notes").exists()


def test_usr_local_lands_in_var_and_is_written(node: Path) -> None:
    files = [file_entry("/etc/app.conf", "a\n"), file_entry("/usr/local/bin/tool", "#!/bin/sh\n")]
    assert apply(node, doc("rendered-worker-2", files)) is Outcome.REBOOT_PENDING
    assert (node / "var/usrlocal/bin/tool").read_text() == "#!/bin/sh\n"


TAILS = [
    "machine-config-daemon-force", "machine-config-daemon.lock", "core/.ssh/authorized_keys",
    "core/.ssh/authorized_keys.d/ignition", "systemd/system/x.service", "bin/x", "x.conf",
    "lib/x", "home/core/x", "ok/file",
]  # fmt: skip
prefixes = st.sampled_from(sorted({*RHCOS_TOPLEVEL_LINKS, "/run", "/var", "/etc", "/usr"}))


@settings(max_examples=150, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(prefixes, st.sampled_from(TAILS))
def test_symlinked_parents_never_carry_a_write_past_a_guard(
    rhcos: Path, tmp_path_factory: pytest.TempPathFactory, prefix: str, tail: str
) -> None:
    root = tmp_path_factory.mktemp("case") / "root"
    shutil.copytree(rhcos, root, symlinks=True)
    path = f"{prefix}/{tail}"
    before = snapshot(root)
    files = [file_entry("/etc/app.conf", "a\n"), file_entry(path, "planted\n")]
    try:
        apply(root, doc("rendered-worker-2", files))
    except (UpdateError, ConfigError) as e:
        assert str(e).startswith(
            ("spec.config.storage.files[1]", "can't reconcile", "ignition", "could not calculate")
        )
        assert snapshot(root) == before
        return
    landed = Path(Root(root).host_path(path)).resolve()
    inside = landed.relative_to(root.resolve()).as_posix()
    assert not inside.startswith(("proc/", "sys/", "dev/", "etc/machine-config-daemon/orig"))
    assert not inside.startswith("usr/") or inside.startswith("usr/local/")
    assert inside not in ("run/machine-config-daemon-force", "run/machine-config-daemon.lock")
    keys = root / "var/home/core/.ssh/authorized_keys.d/ignition"
    assert keys.read_text().strip() == KEY
    current = json.loads((root / CURRENT_CONFIG_PATH.lstrip("/")).read_text())
    assert current["metadata"]["name"] == "rendered-worker-2"
    assert landed.read_text() == "planted\n"


def test_a_file_landing_on_a_unit_of_the_config_is_refused(node: Path) -> None:
    (node / "etc/systemd/alias").symlink_to("system")
    files = [file_entry("/etc/app.conf", "a\n"), file_entry("/etc/systemd/alias/app.service", "x")]
    with pytest.raises(UpdateError) as refused:
        apply(node, doc("rendered-worker-2", files))
    assert str(refused.value) == (
        'spec.config.storage.files[1].path: "/etc/systemd/alias/app.service" resolves to '
        '"/etc/systemd/system/app.service" on this node: "/etc/systemd/system/app.service" '
        "conflicts with a systemd unit or dropin"
    )
    assert (node / "etc/systemd/system/app.service").read_text() == UNIT


def test_upstreams_kubelet_dropin_file_is_written(node: Path) -> None:
    dropin = "/etc/systemd/system/kubelet.service.d/20-logging.conf"
    files = [file_entry("/etc/app.conf", "a\n"), file_entry(dropin, "[Service]\n")]
    assert apply(node, doc("rendered-worker-2", files)) is Outcome.REBOOT_PENDING
    assert (node / dropin.lstrip("/")).read_text() == "[Service]\n"
