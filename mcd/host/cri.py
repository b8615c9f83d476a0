"""The node's container runtime over its CRI socket, through ``crictl`` (upstream talks the same
CRI API over gRPC: ``pkg/daemon/cri``): is an image there, pull one. Pulls authenticate as
CRI-O does for the kubelet (its ``global_auth_file``, the node's pull secret on OpenShift):
no credential is ever put on a command line or in a log.
"""

from __future__ import annotations

import re

from mcd.host.errors import HostError
from mcd.host.rootfs import Root
from mcd.host.runner import CommandError, Runner

SOCKET = "/var/run/crio/crio.sock"
CRICTL = "crictl"
PULL_TIMEOUT = 1800.0
_LOG_PREFIX = re.compile(r"^[A-Z]{4}\[\d+\] ")
"""crictl's logrus prefix (``FATA[0001] ``): the runtime's own message follows it."""


class CriError(HostError):
    """The runtime refused or failed a request; ``str()`` is its own message."""


class Cri:
    def __init__(self, root: Root, runner: Runner | None = None, socket: str = SOCKET) -> None:
        self.root = root
        self.socket = socket
        self.runner = runner or Runner()

    def _argv(self, *args: str) -> list[str]:
        """The node's own crictl when the root carries one (as upstream's daemon, chrooted
        into the host), else the agent's, on the node's socket."""
        if self.root.path != "/" and self.root.exists(f"/usr/bin/{CRICTL}"):
            head = ["chroot", self.root.path, CRICTL, "--runtime-endpoint", f"unix://{self.socket}"]
        else:
            endpoint = "unix://" + self.root.host_path(self.socket)
            head = [CRICTL, "--runtime-endpoint", endpoint]
        return [*head, "--timeout", "60s", *args]

    def image_present(self, image: str) -> bool:
        """CRI ``ImageStatus``: whether the runtime has ``image``."""
        try:
            done = self.runner.run(self._argv("inspecti", "-q", image), check=False, timeout=120)
        except CommandError as e:
            raise CriError(str(e)) from e
        return done.returncode == 0

    def pull(self, image: str) -> None:
        """CRI ``PullImage``; :class:`CriError` with the runtime's message."""
        try:
            self.runner.run(self._argv("pull", image), timeout=PULL_TIMEOUT)
        except CommandError as e:
            stderr = (e.result.stderr if e.result else "").strip().splitlines()
            last = _LOG_PREFIX.sub("", stderr[-1]) if stderr else str(e)
            raise CriError(last) from e
