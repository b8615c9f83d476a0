"""Try mode: ``mcd once-from --try DURATION`` applies a config that reverts on its own unless
``mcd confirm`` arrives in time (as Talos ``--mode=try``).

Before the try is applied, the previous config's document is kept in mcd's state dir
(``try-previous.json``, root only) with the deadline (``try.json``). The revert must outlive the
command: where a systemd manager runs the host (``--root /``), a transient timer
(``systemd-run --on-active``, unit ``mcd-try-revert``) runs ``mcd try-revert`` at the
deadline; everywhere, every later ``mcd once-from``, ``mcd confirm`` and ``mcd try-revert``
honours a deadline that passed first (a node that was off at the deadline reverts at the
next command). The revert is an ordinary once-from of the previous config (its own journal,
its own rollback). Only rebootless changes can be tried: a change that needs a reboot is
refused before anything is written.
"""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
import sys
import time
from dataclasses import asdict, dataclass

import mcd
from mcd.host.errors import HostError
from mcd.host.fs import fsops
from mcd.host.fs.sealing import STATE_FILE_MODE
from mcd.host.rootfs import Root
from mcd.host.runner import CommandError, Runner

log = logging.getLogger(__name__)

TRY_STATE = "/etc/machine-config-daemon/try.json"
TRY_PREVIOUS = "/etc/machine-config-daemon/try-previous.json"
TIMER_UNIT = "mcd-try-revert"


@dataclass(frozen=True)
class TryState:
    config: str
    """The config on trial."""
    previous: str
    """The config a revert goes back to."""
    deadline: float
    """Seconds since the epoch."""
    timer: bool = False
    """Whether a systemd timer was set for the deadline."""

    def expired(self, now: float | None = None) -> bool:
        return (time.time() if now is None else now) >= self.deadline

    def describe(self, now: float | None = None) -> str:
        left = self.deadline - (time.time() if now is None else now)
        when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.deadline))
        if left <= 0:
            return f"try of {self.config} expired at {when}; reverts to {self.previous}"
        return (
            f"trying {self.config}: reverts to {self.previous} at {when} ({left:.0f}s) "
            "unless `mcd confirm`"
        )


class TryError(Exception):
    """Try mode cannot be used here; the message says why."""


def load(root: Root) -> TryState | None:
    try:
        doc = json.loads(root.read_bytes(TRY_STATE))
        return TryState(
            str(doc["config"]), str(doc["previous"]), float(doc["deadline"]),
            bool(doc.get("timer")),
        )  # fmt: skip
    except FileNotFoundError:
        return None
    except (OSError, HostError, ValueError, KeyError, TypeError) as e:
        raise TryError(
            f"unreadable try state {TRY_STATE}: {e}; `mcd confirm` keeps the current config"
        ) from e


def previous_document(root: Root) -> bytes:
    return root.read_bytes(TRY_PREVIOUS)


def begin(root: Root, config: str, previous: str, previous_doc: bytes, seconds: float) -> TryState:
    """Record the try (before anything is applied: a crash mid-way still reverts)."""
    fsops.write_file(root, TRY_PREVIOUS, previous_doc, STATE_FILE_MODE)
    state = TryState(config, previous, time.time() + seconds)
    save(root, state)
    return state


def save(root: Root, state: TryState) -> None:
    fsops.write_file(root, TRY_STATE, json.dumps(asdict(state)).encode(), STATE_FILE_MODE)


def clear(root: Root, runner: Runner | None = None, timer: bool = False) -> None:
    for path in (TRY_STATE, TRY_PREVIOUS):
        if root.exists(path):
            fsops.remove(root, path)
    if timer:
        try:  # the deadline's timer has nothing left to do
            (runner or Runner()).run(["systemctl", "stop", f"{TIMER_UNIT}.timer"], check=False)
        except CommandError as e:
            log.warning("Could not stop %s.timer: %s", TIMER_UNIT, e)


def schedule(root: Root, state: TryState, live: bool, runner: Runner | None = None) -> TryState:
    """A transient systemd timer for the deadline where systemd runs this root; the state
    says whether one was set (else the next mcd command honours the deadline)."""
    if not live or root.path != "/" or shutil.which("systemd-run") is None:
        log.info("No systemd timer for the try's deadline; the next mcd command honours it")
        return state
    run = runner or Runner()
    # whole seconds, rounded up: a timer that fired before the deadline would find nothing due
    seconds = max(1, math.ceil(state.deadline - time.time()))
    # a revert that failed last time leaves its unit failed (shown by `systemctl --failed`
    # until now): systemd-run refuses a unit name that is still loaded
    run.run(["systemctl", "reset-failed", f"{TIMER_UNIT}.service"], check=False)
    argv = [
        "systemd-run", f"--unit={TIMER_UNIT}", f"--on-active={seconds}s",
        # systemd's default accuracy (1 min) would let a 10 s try run for 70 s
        "--timer-property=AccuracySec=1s",
        "--description=mcd: revert an unconfirmed try",
        # systemd starts the unit with an empty environment in /: this interpreter must
        # find mcd (and what it imports) there as it did here
        f"--setenv=PYTHONPATH={unit_python_path()}",
        sys.executable, "-m", "mcd", "try-revert", "--root", "/",
    ]  # fmt: skip
    try:
        run.run(argv)
    except CommandError as e:
        log.warning("Could not set a timer for the try's deadline (%s); the next mcd "
                    "command honours it", e)  # fmt: skip
        return state
    timed = TryState(state.config, state.previous, state.deadline, timer=True)
    save(root, timed)
    return timed


def unit_python_path() -> str:
    """Where this process found mcd, then its own ``PYTHONPATH``, as absolute paths: what
    ``python -m mcd`` needs in a unit that systemd starts with none of our environment."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(mcd.__file__)))
    extra = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    paths = [here, *(os.path.abspath(p) for p in extra if p)]
    return os.pathsep.join(dict.fromkeys(paths))
