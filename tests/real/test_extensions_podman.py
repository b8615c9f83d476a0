"""Extensions from a real image (issue 17): a real podman (state in the test cache, see
:mod:`tests.real.podman_image`) creates the container from an extensions image and copies
its tree out; rpm-ostree's stand-in then installs from the repository it finds there."""

from __future__ import annotations

import json
import os
import shutil
import tarfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcd.agent.update.transaction import Outcome
from mcd.host.osupdate.extensions import CONTENT_BASE_DIR, PIVOT_NAME_PREFIX, REPO_FILE
from tests.fakes import rpm_ostree
from tests.integration.test_transaction import IMAGE_A, OstreeNode, ostree  # noqa: F401
from tests.real import podman_image


@pytest.fixture
def extensions_image(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    if shutil.which("podman") is None:
        pytest.skip("real podman: podman is not installed")
    tree = tmp_path / "tree"
    repo = tree / "usr/share/rpm-ostree/extensions"
    repo.mkdir(parents=True)
    (repo / "usbguard-1.1.2-4.el9.x86_64.rpm").write_bytes(b"\xed\xab\xee\xdb")
    (repo / "sysstat-12.5.4-9.el9.x86_64.rpm").write_bytes(b"\xed\xab\xee\xdb")
    with tarfile.open(tmp_path / "tree.tar", "w") as tar:
        tar.add(tree, arcname=".")
    tag = f"localhost/mcd-test-extensions:i17-{uuid.uuid4().hex[:8]}"
    podman_image.podman("import", "--quiet", "--change", 'CMD ["/bin/true"]',
                        str(tmp_path / "tree.tar"), tag)  # fmt: skip
    wrapper = tmp_path / "bin/podman"  # the node's podman, its storage the test cache's
    wrapper.parent.mkdir()
    real = shutil.which("podman")
    assert real is not None
    argv = " ".join(f"'{a}'" for a in [real, *podman_image.podman_argv()[1:]])
    wrapper.write_text(f'#!/bin/sh\nexec {argv} "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{wrapper.parent}:{os.environ['PATH']}")
    try:
        yield tag
    finally:
        podman_image.podman("rmi", "--force", tag, check=False)


def test_a_real_podman_extracts_the_repository_and_leaves_no_container(
    ostree: OstreeNode,  # noqa: F811
    extensions_image: str,
) -> None:
    rpm = ostree.rpm()
    rpm["root"] = str(ostree.root)
    rpm_ostree.save(ostree.state, rpm)
    old = ostree.write_config("rendered-worker-1", osImageURL=IMAGE_A)
    assert ostree.apply(old, skip_reboot=True) is Outcome.REBOOT_PENDING
    new = ostree.write_config("rendered-worker-2", osImageURL=IMAGE_A,
                              extensions=["usbguard", "sysstat"],
                              baseOSExtensionsContainerImage=extensions_image)  # fmt: skip
    assert ostree.apply(new) is Outcome.REBOOTING
    staged = next(d for d in ostree.rpm()["deployments"] if d["staged"])
    assert sorted(staged["requested-packages"]) == ["sysstat", "usbguard"]
    assert not (ostree.root / REPO_FILE.lstrip("/")).exists()
    assert list((ostree.root / CONTENT_BASE_DIR.lstrip("/")).iterdir()) == []
    listing = podman_image.podman("ps", "--all", "--format=json").stdout
    names = [n for c in json.loads(listing or "[]") for n in c.get("Names") or []]
    assert not [n for n in names if n.startswith(PIVOT_NAME_PREFIX)]
