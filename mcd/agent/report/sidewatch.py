"""The agent's side watchers: threads that report on the host but never change it.

* :class:`LoginReporter` follows logind's session starts in the host journal
  (:mod:`mcd.host.systemd.logins`): every session is counted in ``ssh_accesses_total``, and the
  Node gets upstream's ``ssh=accessed`` annotation once per boot;
* :func:`poll_kubelet` asks the kubelet's health endpoint every interval and keeps the
  count of consecutive failures in ``mcd_kubelet_state`` (upstream's wording in the log).
"""

from __future__ import annotations

import logging
import threading

from mcd.agent.report.metrics import Metrics
from mcd.cluster.api import ApiError
from mcd.cluster.node import NodeWriter
from mcd.host.checks.kubelet import KubeletUnhealthy, check_kubelet
from mcd.host.rootfs import Root
from mcd.host.systemd.logins import Login, LoginMonitor
from mcd.model.vocabulary import SSH_ACCESSED, Annotation

log = logging.getLogger(__name__)


class LoginReporter:
    def __init__(self, root: Root, metrics: Metrics, writer: NodeWriter) -> None:
        self.metrics = metrics
        self.writer = writer
        self.marked = False
        self.monitor = LoginMonitor.for_root(root, self.on_login)

    def on_login(self, login: Login) -> None:
        """Count every session; annotate the Node once per boot (upstream's wording)."""
        self.metrics.ssh_accesses.inc()
        log.info("Detected a new login session: %s", login.message)
        if self.marked:
            return
        log.info("Login access is discouraged! Applying annotation: %s", Annotation.SSH)
        try:
            self.writer.set_annotations({Annotation.SSH: SSH_ACCESSED})
            self.marked = True
        except ApiError as e:  # tried again at the next login
            log.warning("cannot apply annotation for SSH access due to: %s", e)

    def run(self, stop: threading.Event) -> None:
        if self.monitor is None:
            return
        try:
            self.monitor.run(stop)
        except OSError as e:  # an unreadable journal: say so once, keep the agent
            log.warning("Login monitor stopped: cannot read the journal: %s", e)


def poll_kubelet(endpoint: str, interval: float, metrics: Metrics, stop: threading.Event) -> None:
    failures = 0
    while not stop.wait(interval):
        try:
            check_kubelet(endpoint)
            failures = 0
        except KubeletUnhealthy as e:
            failures += 1
            log.warning(
                "Got an error from auxiliary tools: kubelet health check has failed %d "
                "times: %s", failures, e,
            )  # fmt: skip
        metrics.kubelet_state.set(failures)
