"""Who may lead: where the controller's Lease is (the install namespace, never ``default``),
and never beside upstream's machine-config-controller (beyond upstream, whose operator runs
one controller: a cluster with both would have two writers of every ``desiredConfig`` and
pool status)."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable

from mcd.cluster.api import ApiError, Kube
from mcd.cluster.events import SERVICE_ACCOUNT_NAMESPACE
from mcd.cluster.lease import upstream_controller

log = logging.getLogger(__name__)

INSTALL_NAMESPACE = "mcd"
"""Where the Lease is when neither ``--namespace`` nor a pod says (the Deployment's)."""
EXIT_UPSTREAM_RUNS = 78
"""Upstream's machine-config-controller runs (or cannot be told not to): sysexits'
``EX_CONFIG``, a cluster set up for two controllers."""
UPSTREAM_EVERY = 30.0
"""Seconds between two looks for upstream's controller while leading."""


def install_namespace(given: str = "", sa_file: str = SERVICE_ACCOUNT_NAMESPACE) -> str:
    """Where the Lease and the Events are: ``--namespace``, else ``$POD_NAMESPACE``, else the
    service account's namespace (in a pod), else :data:`INSTALL_NAMESPACE` (never
    ``default``: a controller started from a laptop must find the Deployment's Lease)."""
    if given or os.environ.get("POD_NAMESPACE"):
        return given or os.environ["POD_NAMESPACE"]
    try:
        with open(sa_file, encoding="utf-8") as f:
            found = f.read(256).strip()
    except OSError:
        found = ""
    return found or INSTALL_NAMESPACE


class UpstreamGuard:
    """Looks for upstream's controller (:func:`mcd.cluster.lease.upstream_controller`): at
    start, just before the Lease is taken (:meth:`may_lead`, the Lease's ``before_take``) and
    every :data:`UPSTREAM_EVERY` seconds while leading (:meth:`due`)."""

    def __init__(self, kube: Kube, every: float = UPSTREAM_EVERY,
                 clock: Callable[[], float] = time.monotonic) -> None:  # fmt: skip
        self.kube, self.every, self.clock = kube, every, clock
        self.runs = ""
        """Why upstream's controller is taken to run ("" when it is not): final."""
        self.unknown = False
        """The last look failed (not for want of a right): the Lease is not taken yet."""
        self.at = float("-inf")

    def due(self) -> bool:
        return self.clock() - self.at >= self.every

    def look(self) -> str:
        """Look again; :attr:`runs`."""
        self.at = self.clock()
        try:
            self.runs = upstream_controller(self.kube)
        except ApiError as e:
            if e.status not in (401, 403):  # the next look decides
                log.warning("Could not look for upstream's machine-config-controller: %s", e)
                self.unknown = True
                return self.runs
            self.runs = (
                f"cannot tell whether it runs: {e} (the controller's ClusterRole, "
                "daemonset/kubernetes/05-controller-rbac.yaml, lets it get both by name)"
            )
        self.unknown = False
        return self.runs

    def may_lead(self) -> str:
        """Why this process must not take the Lease now ("" when it may)."""
        if self.look():
            return self.runs
        return "upstream's controller could not be looked for" if self.unknown else ""

    def stopping(self) -> int:
        """The one line, and the exit code."""
        log.error(
            "Upstream's machine-config-controller runs on this cluster (%s): mcd's controller "
            "does not run beside it (both would write desiredConfig and pool status); "
            "exiting with code %d",
            self.runs,
            EXIT_UPSTREAM_RUNS,
        )
        return EXIT_UPSTREAM_RUNS
