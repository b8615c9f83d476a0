"""Running host tools (rpm, dpkg-query, systemctl, usermod) with upstream-style logs and errors.

Every command is logged as ``Running: <cmd>`` before it runs. Arguments that
carry secrets (a password hash) are shown as ``<redacted>`` in logs and errors.
A failure raises :class:`CommandError` worded as upstream's
``error running <cmd>: <stderr>: exit status N``, stderr cut at 256 characters.
"""

from __future__ import annotations

import logging
import shlex
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mcd.host.errors import HostError

log = logging.getLogger(__name__)

STDERR_LIMIT = 256
REDACTED = "<redacted>"


@dataclass(frozen=True)
class CommandResult:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str


class CommandError(HostError):
    def __init__(self, shown: str, result: CommandResult | None, detail: str) -> None:
        self.result = result
        super().__init__(f"error running {shown}: {detail}")


def _cut(text: str) -> str:
    text = text.strip()
    if len(text) <= STDERR_LIMIT:
        return text
    return f"{text[:STDERR_LIMIT]} [{len(text) - STDERR_LIMIT} more chars]"


class Runner:
    """Runs commands for the host layer; one place to log, time out and word failures."""

    def __init__(self, env: Mapping[str, str] | None = None, timeout: float = 600.0) -> None:
        self._env = dict(env) if env is not None else None
        self._timeout = timeout

    def run(
        self,
        argv: Sequence[str],
        *,
        check: bool = True,
        secret: Sequence[int] = (),
        timeout: float | None = None,
    ) -> CommandResult:
        shown = " ".join(
            REDACTED if i in secret else shlex.quote(arg) for i, arg in enumerate(argv)
        )
        log.info("Running: %s", shown)
        try:
            proc = subprocess.run(
                list(argv),
                capture_output=True,
                text=True,
                errors="replace",
                env=self._env,
                timeout=timeout or self._timeout,
                check=False,
                stdin=subprocess.DEVNULL,
            )
        except FileNotFoundError as e:
            raise CommandError(shown, None, f"{argv[0]}: command not found") from e
        except subprocess.TimeoutExpired as e:
            raise CommandError(shown, None, f"timed out after {e.timeout:g}s") from e
        result = CommandResult(tuple(argv), proc.returncode, proc.stdout, proc.stderr)
        if check and proc.returncode != 0:
            raise CommandError(shown, result, f"{_cut(proc.stderr)}: exit status {proc.returncode}")
        return result
