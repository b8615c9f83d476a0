"""Upstream's ``kubeletRebootstrap`` (pkg/daemon/daemon.go): what is removed, restarted and
waited for; and the x509 test of upstream's ``Run`` (``strings.Contains(..., "x509")``)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from mcd.agent.boot import rebootstrap
from mcd.host.rootfs import Root
from mcd.model.certificates.serviceca import KUBELET_KUBECONFIG, is_x509_error
from tests.fakes.memory_systemd import MemorySystemd


def test_the_kubeconfig_is_removed_the_kubelet_restarted_and_its_new_file_awaited(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root, systemd = Root(str(tmp_path)), MemorySystemd(tmp_path)
    kc = tmp_path / KUBELET_KUBECONFIG.lstrip("/")
    kc.parent.mkdir(parents=True)
    kc.write_text("old")
    rebootstrap.set_deferred(root, True)
    state = tmp_path / rebootstrap.STATE_FILE.lstrip("/")
    assert state.stat().st_mode & 0o777 == 0o600
    with caplog.at_level(logging.WARNING), pytest.raises(rebootstrap.RebootstrapError) as raised:
        rebootstrap.kubelet_rebootstrap(root, systemd, interval=0.01, timeout=0.03)
    assert str(raised.value) == (
        "something went wrong while waiting for kubeconfig file to generate: "
        "context deadline exceeded"
    )
    assert systemd.calls == [("restart", ("kubelet.service",))]
    assert not kc.exists() and not state.exists()
    assert "Failed to get kubeconfig file: open /var/lib/kubelet/kubeconfig" in caplog.text


def test_a_missing_kubeconfig_fails_before_the_kubelet_is_touched(tmp_path: Path) -> None:
    root, systemd = Root(str(tmp_path)), MemorySystemd(tmp_path)
    with pytest.raises(rebootstrap.RebootstrapError, match="could not remove kubelet's"):
        rebootstrap.kubelet_rebootstrap(root, systemd, interval=0.01, timeout=0.03)
    assert systemd.calls == []


def test_a_signal_or_nothing_deferred_leaves_the_kubelet_alone(tmp_path: Path) -> None:
    root, systemd = Root(str(tmp_path)), MemorySystemd(tmp_path)
    assert rebootstrap.after_stop(root, systemd, "", signaled=False) is None
    rebootstrap.set_deferred(root, True)
    assert rebootstrap.after_stop(root, systemd, "", signaled=True) is None
    assert systemd.calls == [] and rebootstrap.deferred(root)


@pytest.mark.parametrize(
    ("text", "x509"),
    [
        ("tls: failed to verify certificate: x509: certificate signed by unknown authority", 1),
        (
            "https://api: GET /api/v1/nodes: [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify "
            "failed: unable to get local issuer certificate (_ssl.c:1006)",
            1,
        ),
        ("X509: upper case too (upstream lowers the text)", 1),
        ("500 InternalError: injected fault", 0),
        ("Connection refused", 0),
    ],
)
def test_which_errors_count_as_x509(text: str, x509: int) -> None:
    assert is_x509_error(text) is bool(x509)


def test_a_stop_that_is_no_signal_rebootstraps_a_deferred_kubelet(tmp_path: Path) -> None:
    """Upstream's ``case <-stopCh``; a failed wait is the agent's exit status 1."""
    root, systemd = Root(str(tmp_path)), MemorySystemd(tmp_path)
    kc = tmp_path / KUBELET_KUBECONFIG.lstrip("/")
    kc.parent.mkdir(parents=True)
    kc.write_text("old")
    rebootstrap.set_deferred(root, True)
    code = rebootstrap.after_stop(root, systemd, "", signaled=False, interval=0.01, timeout=0.02)
    assert code == 1
    assert systemd.calls == [("restart", ("kubelet.service",))] and not kc.exists()
    assert not rebootstrap.deferred(root)
