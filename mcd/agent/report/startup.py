"""What the agent logs about the node when it starts (upstream ``LogSystemData`` and
``getUnsupportedPackages``): ``rpm-ostree status`` on an ostree system, the booted
deployment's locally layered packages that are no supported extension (the
``mcd_local_unsupported_packages`` gauge), ``journalctl --list-boots`` and the failed systemd
units. Each command that fails is logged and the agent goes on (upstream stops on a failed
``rpm-ostree status``: a node whose rpm-ostree cannot answer is better reported by the update
that needs it)."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from mcd.agent.report.metrics import Metrics
from mcd.host.rootfs import Root
from mcd.host.runner import CommandError, Runner

log = logging.getLogger(__name__)

OSTREE_BOOTED = "/run/ostree-booted"
FINALIZE_FAILURE = "machineconfiguration.openshift.io/ostree-finalize-staged-failure"
"""Upstream's ``MachineConfigDaemonFinalizeFailureAnnotationKey``."""
FINALIZE_LIMIT = 2000
SUPPORTED_PACKAGES = frozenset(
    {
        "pacemaker", "pcs", "fence-agents-all",  # two-node-ha
        "NetworkManager-libreswan", "libreswan", "openvswitch3.5-ipsec",  # ipsec
        "usbguard", "krb5-workstation", "libkadm5", "kernel-devel", "kernel-headers",
        "kata-containers", "sysstat",
    }
)  # fmt: skip
"""The packages of upstream's ``SupportedExtensions()``."""
LAYERED_KEYS = (
    "requested-packages",
    "requested-local-packages",
    "requested-local-fileoverride-packages",
    "requested-base-removals",
    "requested-base-local-replacements",
)


def unsupported_packages(status: Mapping[str, Any]) -> list[str] | None:
    """The booted deployment's package changes that belong to no supported extension, from
    ``rpm-ostree status --json``; None when no deployment is booted."""
    booted = next((d for d in status.get("deployments") or [] if d.get("booted")), None)
    if booted is None:
        return None
    changes = [str(p) for key in LAYERED_KEYS for p in booted.get(key) or []]
    log.info("Found %d requested local packages in the booted deployment", len(changes))
    return [p for p in changes if p not in SUPPORTED_PACKAGES]


def _argv(root: Root, argv: Sequence[str]) -> list[str]:
    if root.path != "/" and root.exists(f"/usr/bin/{argv[0]}"):
        return ["chroot", root.path, *argv]
    return list(argv)


def log_system_data(root: Root, metrics: Metrics, node: str, runner: Runner | None = None) -> None:
    run = runner or Runner(timeout=60)
    if root.exists(OSTREE_BOOTED):
        try:
            log.info("%s", run.run(_argv(root, ["rpm-ostree", "status"])).stdout)
            status = json.loads(run.run(_argv(root, ["rpm-ostree", "status", "--json"])).stdout)
        except (CommandError, ValueError) as e:
            log.error("unable to get rpm-ostree status: %s", e)
        else:
            unsupported = unsupported_packages(status)
            if unsupported is None:
                log.warning("No booted deployment found in rpm-ostree status")
            else:
                for package in unsupported:
                    log.info("Unsupported package %s", package)
                metrics.unsupported_packages.labels(node).set(len(unsupported))
    journal = ["journalctl", "--list-boots"] if root.path == "/" else [
        "journalctl", f"--root={root.path}", "--list-boots"]  # fmt: skip
    try:
        log.info("journalctl --list-boots:%s", run.run(journal).stdout)
    except CommandError as e:
        log.error("Listing boots: %s", e)
    try:
        failed = run.run(
            _argv(root, ["systemctl", "list-units", "--state=failed", "--no-legend"])
        ).stdout
    except CommandError as e:
        log.error("Listing failed systemd services: %s", e)
    else:
        if failed.strip():
            log.info("systemctl --failed:%s", failed)
        else:
            log.info("systemd service state: OK")


def log_system_data_in_background(root: Root, metrics: Metrics, node: str) -> None:
    """At start, in a thread of its own: the start never waits for rpm-ostree or journalctl."""
    threading.Thread(
        target=log_system_data, args=(root, metrics, node), name="system-data", daemon=True
    ).start()


def deployment_error(journal: str) -> str | None:
    """The first ``error:`` line of ostree-finalize-staged's messages (rpmostree-client-go
    ``parseDeploymentError``), or None."""
    return next((line for line in journal.splitlines() if line.startswith("error:")), None)


def previous_finalize_error(root: Root, runner: Runner | None = None) -> str | None:
    """``QueryPreviousDeploymentError``: what ostree-finalize-staged.service said went wrong
    when the previous boot ended; ``CommandError`` when the journal cannot be read."""
    argv = ["journalctl", "-b", "-1", "-o", "cat", "_UID=0", "-u", "ostree-finalize-staged.service"]
    if root.path != "/":
        argv.insert(1, f"--root={root.path}")
    return deployment_error((runner or Runner(timeout=60)).run(argv).stdout)


def finalize_failure_annotation(
    root: Root, annotations: Mapping[str, str], runner: Runner | None = None
) -> dict[str, str | None]:
    """Upstream ``syncFinalizationFailureAnnotation`` at start on an ostree system: the
    previous boot's finalization error (at most 2000 characters) in the
    ``ostree-finalize-staged-failure`` annotation, set back to empty once a boot finalized
    well; ``{}`` when there is nothing to write."""
    if not root.exists(OSTREE_BOOTED):
        return {}
    try:
        error = previous_finalize_error(root, runner) or ""
    except CommandError as e:
        log.warning("failed to query for deployment failure: %s", e)
        return {}
    if error:
        log.warning("Failed to finalize previous deployment: %s", error)
        error = error[:FINALIZE_LIMIT]
    else:
        log.info("Previous boot ostree-finalize-staged.service appears successful")
    if not error and FINALIZE_FAILURE not in annotations:
        return {}
    return {} if annotations.get(FINALIZE_FAILURE) == error else {FINALIZE_FAILURE: error}
