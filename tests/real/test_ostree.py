"""The rpm-ostree stand-in on a real OSTree sysroot: what mcd's rpm-ostree client stages, sets
and drops is checked against the deployments OSTree itself reports (``ostree admin status``,
the bootloader entries it wrote), not only against the stand-in's own record."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcd.host.osupdate.rpmostree import Retry, RpmOstree, RpmOstreeError
from mcd.host.rootfs import Root
from tests.e2e.harness import BIN, IMAGE_A, IMAGE_B
from tests.fakes import ostree_sysroot, rpm_ostree

IMAGE_C = "quay.io/openshift/os@sha256:cccc"


@pytest.fixture
def sysroot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    if not ostree_sysroot.available():
        pytest.skip("real OSTree: needs root and the ostree command (bash scripts/setup.sh)")
    root = tmp_path / "sysroot"
    state = tmp_path / "rpm-ostree.json"
    rpm_ostree.save(state, rpm_ostree.new_state(IMAGE_A, ["root=UUID=abc", "rw"], sysroot=root))
    monkeypatch.setenv("PATH", f"{BIN}:{os.environ['PATH']}")
    monkeypatch.setenv("MCD_FAKE_RPMOSTREE_STATE", str(state))
    try:
        yield root
    finally:
        ostree_sysroot.purge(root)


@pytest.fixture
def client(tmp_path: Path, sysroot: Path) -> RpmOstree:
    return RpmOstree(Root(str(tmp_path / "node")), retry=Retry(attempts=1))


def state_path() -> Path:
    return Path(os.environ["MCD_FAKE_RPMOSTREE_STATE"])


def ostree_status(sysroot: Path) -> list[str]:
    """Deployment names (``<checksum>.<serial>``) as ``ostree admin status`` lists them."""
    out = subprocess.run(["ostree", "admin", "status", f"--sysroot={sysroot}"],
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    return [line.split()[-1] for line in out.splitlines() if line.strip().startswith("rhcos ")]


def entry_kargs(sysroot: Path, index: int = 0) -> list[str]:
    """Kernel arguments in the bootloader entry OSTree wrote (``index`` 0: the default)."""
    return list(ostree_sysroot.deployments(sysroot)[index]["kargs"])


def test_rebase_stages_a_real_deployment_of_the_new_image(sysroot: Path, client: RpmOstree) -> None:
    (booted_name,) = ostree_status(sysroot)
    assert client.rebase(IMAGE_B)
    names = ostree_status(sysroot)
    assert names[1:] == [booted_name] and len(names) == 2  # the new one is the default
    status = client.status()
    assert status.booted.image_url == IMAGE_A
    assert status.staged is not None and status.staged.image_url == IMAGE_B
    assert status.staged.id == f"rhcos-{names[0]}"
    assert status.staged.checksum != status.booted.checksum  # another commit, another tree
    origin = sysroot / f"ostree/deploy/rhcos/deploy/{names[0]}.origin"
    assert f"ostree-unverified-registry:{IMAGE_B}" in origin.read_text()
    assert not client.rebase(IMAGE_A)  # booted already: nothing staged, nothing changed
    assert ostree_status(sysroot) == names


def test_kernel_arguments_are_appended_and_deleted_in_the_bootloader_entry(
    sysroot: Path, client: RpmOstree
) -> None:
    client.update_kargs([], ["nosmt", "mitigations=auto"])
    assert entry_kargs(sysroot) == ["root=UUID=abc", "rw", "nosmt", "mitigations=auto"]
    assert entry_kargs(sysroot, 1) == ["root=UUID=abc", "rw"]  # the booted one is untouched
    client.check_kargs(["nosmt", "mitigations=auto"])
    client.update_kargs(["nosmt", "mitigations=auto"], ["mitigations=off"])
    assert entry_kargs(sysroot) == ["root=UUID=abc", "rw", "mitigations=off"]
    assert len(ostree_status(sysroot)) == 2  # the new stage replaced the pending one
    with pytest.raises(RpmOstreeError, match=r"missing expected kernel arguments: \[nosmt\]"):
        client.check_kargs(["nosmt"])


def test_cleanup_undeploys_the_staged_deployment(sysroot: Path, client: RpmOstree) -> None:
    (booted_name,) = ostree_status(sysroot)
    client.rebase(IMAGE_B)
    client.cleanup_pending()
    assert ostree_status(sysroot) == [booted_name]
    assert client.status().staged is None


def test_booting_the_staged_deployment_keeps_one_rollback(sysroot: Path, client: RpmOstree) -> None:
    first = ostree_status(sysroot)[0]
    client.rebase(IMAGE_B)
    second = ostree_status(sysroot)[0]
    assert rpm_ostree.boot_staged(state_path())
    assert client.status().booted.image_url == IMAGE_B
    assert client.status().booted.id == f"rhcos-{second}"
    client.rebase(IMAGE_C)
    third = ostree_status(sysroot)[0]
    assert ostree_status(sysroot) == [third, second, first]  # staged, booted, rollback
    assert rpm_ostree.boot_staged(state_path())
    assert ostree_status(sysroot) == [third, second]  # the oldest is gone
    assert client.status().booted.image_url == IMAGE_C


def test_a_node_that_boots_the_old_deployment_reports_it(sysroot: Path, client: RpmOstree) -> None:
    """ostree-finalize-staged failed: the staged deployment never became the default."""
    (old,) = ostree_status(sysroot)
    client.rebase(IMAGE_B)
    state = rpm_ostree.load(state_path())
    state["deployments"] = [d for d in state["deployments"] if not d["staged"]]
    rpm_ostree.save(state_path(), state)
    assert not rpm_ostree.boot_staged(state_path())
    assert ostree_status(sysroot) == [old]
    status = client.status()
    assert status.booted.image_url == IMAGE_A and status.staged is None
