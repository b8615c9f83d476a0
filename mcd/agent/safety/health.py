"""Health gates: run the checks after an update, keep the last verdict on the node.

The gate's settings come from, in rising precedence: the defaults, the node's pool
(annotation ``mcd-project.github.io/health-gate`` on its MachineConfigPool, where one
exists), the node's own file ``/etc/mcd/health.conf``, and the annotation of the same name on
the Node. Checks, in order (the first failure ends the gate): the units the config enables are
active, the admin's required checks, the kubelet's health endpoint, the Node Ready (agent
only). A failed gate rolls the update back (:class:`mcd.agent.update.transaction.Transaction`).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from mcd.host.checks.healthchecks import kubelet_check, required_checks, units_check
from mcd.host.errors import HostError
from mcd.host.fs import fsops
from mcd.host.fs.sealing import STATE_FILE_MODE
from mcd.host.rootfs import Root
from mcd.host.systemd.manager import SystemdManager
from mcd.model.errors import ConfigError
from mcd.model.machineconfig import MachineConfig
from mcd.model.node.health import (
    GATE_ANNOTATION,
    SETTINGS_FILE,
    CheckResult,
    GateSettings,
    Status,
    Verdict,
    parse_annotation,
    parse_file,
)

if TYPE_CHECKING:
    from mcd.agent.report.metrics import Metrics

log = logging.getLogger(__name__)

GATE_STATE = "/etc/machine-config-daemon/health-gate.json"
"""The last gate's verdict (``mcd status`` shows it)."""

POOLS = "/apis/machineconfiguration.openshift.io/v1/machineconfigpools"

NodeReady = Callable[[float], CheckResult]


class GateSettingsError(ConfigError):
    """The gate's settings cannot be used; the message names where and which field."""


def load_settings(
    root: Root,
    pool_annotations: Mapping[str, str] | None = None,
    node_annotations: Mapping[str, str] | None = None,
) -> GateSettings:
    """The gate's settings for this node (see the module's docstring for the order)."""
    settings = GateSettings()
    try:
        pool_value = (pool_annotations or {}).get(GATE_ANNOTATION)
        if pool_value is not None:
            settings = parse_annotation(settings, pool_value, f"pool annotation {GATE_ANNOTATION}")
        try:
            text = root.read_bytes(SETTINGS_FILE).decode("utf-8")
        except FileNotFoundError:
            text = None
        except (OSError, HostError, UnicodeDecodeError) as e:
            raise GateSettingsError(f"{SETTINGS_FILE}: unreadable: {e}") from e
        if text is not None:
            settings = parse_file(settings, text, SETTINGS_FILE)
        node_value = (node_annotations or {}).get(GATE_ANNOTATION)
        if node_value is not None:
            settings = parse_annotation(settings, node_value, f"node annotation {GATE_ANNOTATION}")
    except GateSettingsError:
        raise
    except ConfigError as e:
        raise GateSettingsError(f"invalid health gate settings: {e}") from e
    return settings


class HealthGate:
    """The checks run after an update; :meth:`run` gives the verdict and records it."""

    def __init__(
        self,
        root: Root,
        systemd: SystemdManager,
        settings: GateSettings,
        *,
        offline: bool = False,
        node_ready: NodeReady | None = None,
        metrics: Metrics | None = None,
        local_kubelet: bool = True,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.root, self.systemd, self.settings = root, systemd, settings
        self.offline = offline
        self.node_ready = node_ready
        self.local_kubelet = local_kubelet
        """Whether localhost's kubelet is the root's (the agent's host mount, ``--root /``)."""
        self.metrics = metrics
        self.sleep = sleep
        self.on_verdict: Callable[[Verdict], None] | None = None
        """Told every verdict (the agent puts it on its Node)."""
        self.on_rollback: Callable[[str, str], None] | None = None
        """Told (reason, ``rebootless``/``reboot``) when a failed gate rolled an update back."""

    def _kubelet(self, mc: MachineConfig) -> CheckResult:
        return _kubelet_of(self, mc)

    def run(self, mc: MachineConfig, settle: bool = True) -> Verdict:
        """``settle``: something was just started or restarted; give it time to die."""
        log.info("Running the health gate for %s (settings from %s)", mc.name, self.settings.source)
        if settle and self.settings.settle and not self.offline:
            self.sleep(self.settings.settle)  # a unit that dies at once is seen dead
        results: list[CheckResult] = []
        steps: list[Callable[[], list[CheckResult]]] = [
            lambda: [units_check(self.systemd, mc, offline=self.offline)],
            lambda: required_checks(self.root, self.settings),
            lambda: [self._kubelet(mc)],
        ]
        if self.node_ready is not None and not self.offline:
            ready = self.node_ready
            steps.append(lambda: [ready(self.settings.timeout)])
        for step in steps:
            results.extend(step())
            if any(r.status is Status.FAILED for r in results):
                break
        verdict = Verdict(mc.name, tuple(results))
        for r in results:
            log.info("Health check %s: %s%s", r.name, r.status, f" ({r.note})" if r.note else "")
        save_verdict(self.root, verdict)
        if self.on_verdict is not None:
            self.on_verdict(verdict)
        if self.metrics is not None:
            failed = verdict.failed.name if verdict.failed is not None else ""
            self.metrics.gate_verdict(verdict.ok, failed)
        return verdict


def _kubelet_of(gate: HealthGate, mc: MachineConfig) -> CheckResult:
    if gate.local_kubelet or gate.offline:
        return kubelet_check(gate.root, mc, gate.settings, offline=gate.offline)
    note = f"the root {gate.root.path} is not this host's: localhost's kubelet is not its own"
    return CheckResult("kubelet", Status.SKIPPED, note)


def once_gate(root: Root, systemd: SystemdManager) -> HealthGate:
    """The gate of ``mcd once-from``: the node file's settings, no Node to be Ready."""
    settings = load_settings(root)
    return HealthGate(
        root, systemd, settings, offline=not systemd.live, local_kubelet=root.path == "/"
    )


def save_verdict(root: Root, verdict: Verdict) -> None:
    doc = {**verdict.as_dict(), "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    try:
        fsops.write_file(root, GATE_STATE, json.dumps(doc).encode(), STATE_FILE_MODE)
    except (OSError, HostError) as e:  # the verdict still counts; only `mcd status` misses it
        log.warning("Could not record the health gate's verdict in %s: %s", GATE_STATE, e)


def forget_verdict(root: Root, config: str) -> None:
    """The recorded verdict, once the node is Done on another config (``config``): a failed
    gate of a config it no longer runs must not set ``mcd_health_gate_failed`` again when the
    agent starts."""
    doc = last_verdict(root)
    if doc is None or doc.get("config") == config:
        return
    try:
        fsops.remove(root, GATE_STATE)
    except (OSError, HostError) as e:
        log.warning("Could not remove %s: %s", GATE_STATE, e)


def last_verdict(root: Root) -> dict[str, object] | None:
    """The last gate's verdict as recorded, or None."""
    try:
        doc = json.loads(root.read_bytes(GATE_STATE))
    except (OSError, HostError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def node_ready_check(
    get_node: Callable[[], Mapping[str, object]], sleep: Callable[[float], None] = time.sleep
) -> NodeReady:
    """A check that the Node's ``Ready`` condition is ``True`` within the timeout; skipped
    when the Node reports no ``Ready`` condition at all (no kubelet posts its status)."""

    def check(timeout: float) -> CheckResult:
        start = time.monotonic()
        not_ready = ""  # the last Ready condition that was not True
        unread = ""  # the last failure to read the Node
        while True:
            try:
                status = get_node().get("status") or {}
            except Exception as e:  # the API server is away: keep trying until the timeout
                status, unread = {}, f"cannot read the Node: {type(e).__name__}"
            else:
                conditions = status.get("conditions") if isinstance(status, dict) else None
                ready = [
                    c for c in conditions or []
                    if isinstance(c, dict) and c.get("type") == "Ready"
                ]  # fmt: skip
                if not ready:
                    return CheckResult(
                        "node-ready", Status.SKIPPED, "the Node has no Ready condition"
                    )
                if ready[0].get("status") == "True":
                    return CheckResult("node-ready", Status.PASSED, "", time.monotonic() - start)
                reason = ready[0].get("reason") or "no reason"
                not_ready = f"Ready={ready[0].get('status')} ({reason})"
            if time.monotonic() - start >= timeout:
                seconds = time.monotonic() - start
                if not not_ready:  # never read: the API server's outage is not the node's
                    return CheckResult("node-ready", Status.SKIPPED, unread, seconds)
                note = f"Node not Ready after {timeout:g}s: {not_ready}"
                return CheckResult("node-ready", Status.FAILED, note, seconds)
            sleep(1.0)

    return check
