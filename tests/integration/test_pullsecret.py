"""The registry pull secret for rpm-ostree: upstream useMergedPullSecrets / linkAuthFile."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from mcd.host.osupdate.pullsecret import (
    INTERNAL_REGISTRY_AUTH_FILE,
    KUBELET_AUTH_FILE,
    OSTREE_AUTH_FILE,
    use_merged_pull_secrets,
)
from mcd.host.rootfs import Root

SECRET = b'{"auths": {"quay.io": {"auth": "c2VjcmV0LXRva2VuLTEyMzQ="}}}'


def _write(root: Path, node_path: str, data: bytes) -> None:
    path = root / node_path.lstrip("/")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _link(root: Path) -> str:
    return os.readlink(root / OSTREE_AUTH_FILE.lstrip("/"))


def test_cluster_pull_secret_without_merged_file(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _write(tmp_path, KUBELET_AUTH_FILE, SECRET)
    caplog.set_level(logging.INFO)
    assert use_merged_pull_secrets(Root(tmp_path)) == KUBELET_AUTH_FILE
    assert _link(tmp_path) == KUBELET_AUTH_FILE  # a symlink to the node path, not a copy
    assert "Merged secret file does not exist; defaulting to cluster pull secret" in caplog.text
    assert "Linking rpm-ostree authfile to /var/lib/kubelet/config.json" in caplog.text
    run_ostree = tmp_path / "run/ostree"
    assert oct(run_ostree.stat().st_mode & 0o777) == oct(0o544)  # os.MkdirAll(dir, 0o544)


def test_merged_secret_preferred_and_old_link_replaced(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _write(tmp_path, KUBELET_AUTH_FILE, SECRET)
    root = Root(tmp_path)
    use_merged_pull_secrets(root)
    _write(tmp_path, INTERNAL_REGISTRY_AUTH_FILE, SECRET)
    caplog.set_level(logging.DEBUG)
    assert use_merged_pull_secrets(root) == INTERNAL_REGISTRY_AUTH_FILE
    assert _link(tmp_path) == INTERNAL_REGISTRY_AUTH_FILE
    assert b"c2VjcmV0" not in caplog.text.encode()  # the secret is never logged


def test_invalid_merged_secret_falls_back(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    _write(tmp_path, INTERNAL_REGISTRY_AUTH_FILE, b'{"auths": {"quay.io": "c2VjcmV0LXRva2Vu')
    caplog.set_level(logging.INFO)
    assert use_merged_pull_secrets(Root(tmp_path)) == KUBELET_AUTH_FILE
    assert "Merged secret file could not be validated" in caplog.text
    assert "c2VjcmV0" not in caplog.text


def test_a_regular_file_at_the_link_is_replaced(tmp_path: Path) -> None:
    _write(tmp_path, OSTREE_AUTH_FILE, b"stale")
    use_merged_pull_secrets(Root(tmp_path))
    assert (tmp_path / OSTREE_AUTH_FILE.lstrip("/")).is_symlink()
