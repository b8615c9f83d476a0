"""The config drift monitor (upstream 3.4): notice within a second when a managed file,
unit or dropin stops matching the current MachineConfig.

inotify watches the parent directories of every managed path; any change of a
managed path (write, create, remove, rename, chmod) leads to a full
validation of files and units against the config. A failed validation calls
``on_drift`` with the upstream reason (``unexpected on-disk state validating
against <config>: content mismatch for file "<path>"``), once per distinct
reason; a later clean validation calls ``on_clear``. The force file appearing
calls ``on_force``. The monitor keeps watching while an update drains and is
stopped only while the update writes files; it is started again after it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from mcd.host.fs.inotify import PathWatcher
from mcd.host.ondisk.validation import UnitFileStates, validate_on_disk
from mcd.host.rootfs import Root
from mcd.model.machineconfig import MachineConfig
from mcd.model.vocabulary import (
    FORCE_FILE,
    VALIDATION_IGNORED_PATHS,
    dropin_path,
    unit_path,
)

log = logging.getLogger(__name__)

SETTLE = 0.05
"""Seconds to let a burst of events (an editor's save, a restore of many files) settle."""


def managed_paths(mc: MachineConfig) -> list[str]:
    paths = [f.path for f in mc.ignition.files if f.path not in VALIDATION_IGNORED_PATHS]
    for unit in mc.ignition.units:
        paths.append(unit_path(unit.name))
        paths.extend(dropin_path(unit.name, d.name) for d in unit.dropins)
    return paths


class DriftMonitor:
    def __init__(
        self,
        root: Root,
        unit_states: UnitFileStates | None,
        on_drift: Callable[[str], None],
        on_clear: Callable[[], None],
        on_force: Callable[[], None] | None = None,
    ) -> None:
        self.root = root
        self.unit_states = unit_states
        self.on_drift = on_drift
        self.on_clear = on_clear
        self.on_force = on_force
        self._lock = threading.Lock()
        self._watcher: PathWatcher | None = None
        self._stop: threading.Event | None = None
        self._thread: threading.Thread | None = None
        self.config_name = ""
        self.validations = 0
        self.epoch = 0
        self.drifted = ""
        """The drift this monitor last reported and has not seen cleared ('' when none)."""
        """Counts starts and stops: a drift reported under an older epoch is stale."""

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self, mc: MachineConfig, drifted: str = "") -> bool:
        """Watch against ``mc`` (restarting if already running). ``drifted`` is the reason the
        node is already Degraded for, so that only a new reason is reported again. False when
        the kernel refuses the watch (a node out of inotify instances or watches, a common
        limit on busy nodes): said in one line, the agent goes on, and the next sync tries
        again; the node's files are still validated at every sync and resync."""
        with self._lock:
            self._stop_locked()
            self.epoch += 1
            self.drifted = ""
            try:
                watcher = PathWatcher(self.root, [*managed_paths(mc), FORCE_FILE])
            except OSError as e:
                log.warning("Config Drift Monitor could not start: %s (inotify: "
                            "fs.inotify.max_user_instances, max_user_watches); on-disk state "
                            "is validated at each sync until it can", e.strerror or e)  # fmt: skip
                return False
            stop = threading.Event()
            self._stop, self._watcher = stop, watcher
            self.config_name = mc.name
            self._thread = threading.Thread(
                target=self._run, args=(mc, watcher, stop, drifted), name="drift", daemon=True
            )
            self._thread.start()
        log.info(
            "Config Drift Monitor started, watching against %s (%d paths in %d directories)",
            mc.name, len(watcher.paths), len(watcher.directories),
        )  # fmt: skip
        return True

    def stop(self) -> bool:
        """Stop watching; True when a monitor was running."""
        with self._lock:
            was_running = self._stop_locked()
            self.epoch += 1
            self.drifted = ""
        if was_running:
            log.info("Config Drift Monitor has shut down")
        return was_running

    def _stop_locked(self) -> bool:
        if self._stop is None or self._thread is None:
            return False
        self._stop.set()
        if self._watcher is not None:
            self._watcher.interrupt()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        self._stop, self._thread, self._watcher = None, None, None
        return True

    def _run(
        self, mc: MachineConfig, watcher: PathWatcher, stop: threading.Event, drifted: str
    ) -> None:
        reported = drifted
        try:
            while not stop.is_set():
                changed = watcher.read(timeout_ms=1000)
                if not changed or stop.is_set():
                    continue
                time.sleep(SETTLE)
                changed |= watcher.read(timeout_ms=0)
                if FORCE_FILE in changed:
                    changed.discard(FORCE_FILE)
                    if self.on_force is not None and self.root.exists(FORCE_FILE):
                        self.on_force()
                if not changed or stop.is_set():
                    continue
                report = validate_on_disk(mc, self.root, self.unit_states)
                self.validations += 1
                if stop.is_set():
                    break
                if not report.ok:
                    reason = report.reasons()[0]
                    self.drifted = reason
                    if reason != reported:
                        reported = reason
                        self.on_drift(reason)
                elif reported:
                    reported = self.drifted = ""
                    log.info("On-disk state matches %s again", mc.name)
                    self.on_clear()
        except Exception:  # the monitor must never take the agent down
            log.exception("Config Drift Monitor failed")
        finally:
            _close_later(watcher)


def _close_later(watcher: PathWatcher) -> None:
    """Close the watcher off the caller's path: closing an inotify descriptor waits for the
    kernel's grace period (15-25 ms), which would otherwise delay every update's writes.
    Nothing reads it any more; the descriptor only lives a few milliseconds longer."""
    threading.Thread(target=watcher.close, name="drift-close", daemon=True).start()
