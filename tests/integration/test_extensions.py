"""Extensions from ``baseOSExtensionsContainerImage`` (issue 17): the repository extracted
from the image with podman, the packages installed through rpm-ostree from it, and a clear
refusal when the image cannot be read.

The podman stand-in (:mod:`tests.fakes.podman`) serves images from directories; the
rpm-ostree stand-in, given the node's root, finds packages only in the enabled
repositories under its ``/etc/yum.repos.d``, as rpm-ostree does.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from mcd.agent.update.transaction import Outcome, UpdateError
from mcd.host.osupdate.extensions import CONTENT_BASE_DIR, REPO_FILE, repo_content
from mcd.host.osupdate.rpmostree import RETRY_ENV
from tests.builders import file_entry
from tests.fakes import podman, rpm_ostree
from tests.integration.test_transaction import IMAGE_A, IMAGE_B, OstreeNode, ostree  # noqa: F401

PODMAN_BIN = Path(__file__).resolve().parents[1] / "fakes" / "podman_bin"
EXT_IMAGE = "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:" + "e" * 64
MISSING_IMAGE = "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:" + "0" * 64


@pytest.fixture
def registry(ostree: OstreeNode, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:  # noqa: F811
    """An extensions image (its repository holds usbguard, krb5-workstation, libkadm5) in
    the podman stand-in's registry; the rpm-ostree stand-in resolves packages in the root."""
    image = tmp_path / "ext-image"
    repo = image / "usr/share/rpm-ostree/extensions"
    repo.mkdir(parents=True)
    for package in ("usbguard-1.1.2-4.el9.x86_64", "krb5-workstation-1.21.1-2.el9.x86_64",
                "libkadm5-1.21.1-2.el9.x86_64"):  # fmt: skip
        (repo / f"{package}.rpm").write_bytes(b"\xed\xab\xee\xdb")
    state = tmp_path / "podman.json"
    state.write_text(json.dumps(podman.new_state({EXT_IMAGE: str(image)})))
    monkeypatch.setenv("PATH", f"{PODMAN_BIN}:{os.environ['PATH']}")
    monkeypatch.setenv("MCD_FAKE_PODMAN_STATE", str(state))
    monkeypatch.setenv("MCD_TEST_PYTHON", sys.executable)
    monkeypatch.setenv(RETRY_ENV, "0.01")  # podman's pull and copy: 6 tries, quickly
    rpm = ostree.rpm()
    rpm["root"] = str(ostree.root)
    rpm_ostree.save(ostree.state, rpm)
    return state


def podman_calls(state: Path) -> list[list[str]]:
    return list(json.loads(state.read_text())["calls"])


def booted_on(ostree: OstreeNode) -> None:  # noqa: F811
    old = ostree.write_config("rendered-worker-1", osImageURL=IMAGE_A,
                              files=[file_entry("/etc/a", "1")])  # fmt: skip
    assert ostree.apply(old, skip_reboot=True) is Outcome.REBOOT_PENDING


def test_extensions_are_installed_from_the_repository_in_the_extensions_image(
    ostree: OstreeNode,  # noqa: F811
    registry: Path,
) -> None:
    booted_on(ostree)
    new = ostree.write_config(
        "rendered-worker-2", osImageURL=IMAGE_A, files=[file_entry("/etc/a", "2")],
        extensions=["usbguard", "kerberos"], baseOSExtensionsContainerImage=EXT_IMAGE,
    )  # fmt: skip
    assert ostree.apply(new) is Outcome.REBOOTING
    staged = next(d for d in ostree.rpm()["deployments"] if d["staged"])
    assert sorted(staged["requested-packages"]) == ["krb5-workstation", "libkadm5", "usbguard"]
    update = [c["argv"] for c in ostree.rpm()["calls"] if c["argv"][0] == "update"]
    assert update == [["update", "--install", "krb5-workstation", "--install", "libkadm5",
                       "--install", "usbguard"]]  # fmt: skip
    calls = podman_calls(registry)
    verbs = [c[0] for c in calls]
    assert verbs == ["images", "pull", "create", "cp", "kill", "rm"]
    assert calls[1] == ["pull", "-q", EXT_IMAGE]  # no kubelet pull secret on this node
    create = calls[2]
    assert (
        "--net=none" in create
        and "--annotation=org.openshift.machineconfigoperator.pivot=true" in create
    )
    assert create[create.index("--name") + 1].startswith("ostree-container-pivot-")
    assert calls[3][1].endswith(":/")
    # the repository and the extracted tree are gone once the OS step is over
    assert not (ostree.root / REPO_FILE.lstrip("/")).exists()
    assert list((ostree.root / CONTENT_BASE_DIR.lstrip("/")).iterdir()) == []
    ostree.reboot()
    assert ostree.apply(new) is Outcome.DONE
    assert ostree.current() == "rendered-worker-2"


def test_removing_an_extension_uninstalls_only_its_packages(
    ostree: OstreeNode,  # noqa: F811
    registry: Path,
) -> None:
    booted_on(ostree)
    rpm = ostree.rpm()
    rpm["deployments"][0]["requested-packages"] = ["usbguard", "htop"]  # htop: not mcd's
    rpm_ostree.save(ostree.state, rpm)
    new = ostree.write_config("rendered-worker-2", osImageURL=IMAGE_A, extensions=["kerberos"],
                              baseOSExtensionsContainerImage=EXT_IMAGE)  # fmt: skip
    assert ostree.apply(new) is Outcome.REBOOTING
    update = [c["argv"] for c in ostree.rpm()["calls"] if c["argv"][0] == "update"]
    assert update == [["update", "--install", "krb5-workstation", "--install", "libkadm5",
                       "--uninstall", "usbguard"]]  # fmt: skip


def test_an_unreadable_extensions_image_is_refused_in_one_line_and_nothing_changes(
    ostree: OstreeNode,  # noqa: F811
    registry: Path,
) -> None:
    booted_on(ostree)
    before = ostree.rpm()["deployments"]
    new = ostree.write_config(
        "rendered-worker-2", osImageURL=IMAGE_B, files=[file_entry("/etc/a", "2")],
        extensions=["usbguard"], baseOSExtensionsContainerImage=MISSING_IMAGE,
    )  # fmt: skip
    with pytest.raises(UpdateError) as caught:
        ostree.apply(new)
    reason = str(caught.value)
    assert reason.startswith(
        f"error pulling extensions image {MISSING_IMAGE} (spec.baseOSExtensionsContainerImage): "
    )
    assert "Error: initializing source docker://" in reason and "\n" not in reason
    assert [c[0] for c in podman_calls(registry)] == ["images"] + ["pull"] * 6  # upstream tries
    assert (ostree.root / "etc/a").read_text() == "1"  # the files step was rolled back
    assert ostree.current() == "rendered-worker-1"
    assert ostree.rpm()["deployments"] == before  # nothing staged, no rebase
    assert not any(c["argv"][0] == "rebase" for c in ostree.rpm()["calls"])
    assert not (ostree.root / REPO_FILE.lstrip("/")).exists()
    assert list((ostree.root / CONTENT_BASE_DIR.lstrip("/")).iterdir()) == []


def test_an_image_without_an_extensions_repository_is_refused(
    ostree: OstreeNode,  # noqa: F811
    registry: Path,
    tmp_path: Path,
) -> None:
    booted_on(ostree)
    state = json.loads(registry.read_text())
    (tmp_path / "not-extensions/usr/bin").mkdir(parents=True)
    state["registry"][MISSING_IMAGE] = str(tmp_path / "not-extensions")
    registry.write_text(json.dumps(state))
    new = ostree.write_config("rendered-worker-2", osImageURL=IMAGE_A, extensions=["sysstat"],
                              baseOSExtensionsContainerImage=MISSING_IMAGE)  # fmt: skip
    with pytest.raises(
        UpdateError,
        match=r"^extensions image .* \(spec\.baseOSExtensionsContainerImage\) has no extensions repository \(/usr/share/rpm-ostree/extensions/ is missing\)$",
    ):
        ostree.apply(new)
    assert not any(c["argv"][0] == "update" for c in ostree.rpm()["calls"])


def test_without_the_repository_rpm_ostree_finds_no_package(
    ostree: OstreeNode,  # noqa: F811
    registry: Path,
) -> None:
    """The stand-in is honest: with no extensions image, the packages are not found."""
    booted_on(ostree)
    new = ostree.write_config("rendered-worker-2", osImageURL=IMAGE_A, extensions=["usbguard"])
    with pytest.raises(UpdateError, match="Packages not found: usbguard"):
        ostree.apply(new)
    assert podman_calls(registry) == []


def test_the_repo_file_is_upstreams_byte_for_byte() -> None:
    assert repo_content("/run/mco-extensions/os-extensions-content-1") == (
        b"[coreos-extensions]\nenabled=1\nmetadata_expire=1m\n"
        b"baseurl=/run/mco-extensions/os-extensions-content-1/usr/share/rpm-ostree/extensions/\n"
        b"gpgcheck=0\nskip_if_unavailable=False\n"
    )


def test_a_package_missing_from_the_staged_deployment_fails_the_update(
    ostree: OstreeNode,  # noqa: F811
    registry: Path,
) -> None:
    """Upstream verifyExtensionsStaged (OCPBUGS-65645): checked before the reboot."""
    booted_on(ostree)
    rpm = ostree.rpm()
    rpm["drop_packages"] = ["libkadm5"]
    rpm_ostree.save(ostree.state, rpm)
    new = ostree.write_config("rendered-worker-2", osImageURL=IMAGE_A, extensions=["kerberos"],
                              baseOSExtensionsContainerImage=EXT_IMAGE)  # fmt: skip
    with pytest.raises(UpdateError) as caught:
        ostree.apply(new)
    assert str(caught.value) == (
        "the following extension packages are missing from the staged deployment: [libkadm5]"
    )
    assert not [d for d in ostree.rpm()["deployments"] if d["staged"]]  # dropped on rollback
    assert ostree.current() == "rendered-worker-1"
    assert not ostree.bus.calls("StartTransientUnit")  # no reboot
