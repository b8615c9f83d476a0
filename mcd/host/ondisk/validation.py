"""On-disk validation: does the node hold exactly what a MachineConfig says?

Mirrors upstream ``validateOnDiskState`` for files, units, dropins and masks:
``lstat`` (a symlink is a mode mismatch), full mode bits, byte-exact contents.
Unlike upstream, every mismatch is reported, not just the first. File contents
never appear in a message.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from mcd.host.errors import PathEscapeError
from mcd.host.fs import gomode
from mcd.host.rootfs import Root, read_nofollow
from mcd.model.errors import DecodeError
from mcd.model.ignition.config import DEFAULT_FILE_MODE
from mcd.model.machineconfig import MachineConfig
from mcd.model.text import goquote, printable
from mcd.model.vocabulary import VALIDATION_IGNORED_PATHS, dropin_path, unit_path

DEV_NULL = "/dev/null"
ENABLED_STATES = frozenset({"enabled", "enabled-runtime"})
NOT_ENABLED_STATES = frozenset({"disabled", "masked", "masked-runtime", "not-found"})


class UnitFileStates(Protocol):
    """The part of the systemd interface validation needs (``systemctl is-enabled``)."""

    def unit_file_state(self, unit: str) -> str: ...


class DriftKind(StrEnum):
    FILE = "file"
    UNIT = "unit"


@dataclass(frozen=True)
class Mismatch:
    path: str
    kind: DriftKind
    message: str


@dataclass(frozen=True)
class ValidationReport:
    config_name: str
    mismatches: tuple[Mismatch, ...]
    files_checked: int
    units_checked: int

    @property
    def ok(self) -> bool:
        return not self.mismatches

    def reasons(self) -> list[str]:
        return [unexpected_state(self.config_name, m.message) for m in self.mismatches]


def unexpected_state(config_name: str, message: str) -> str:
    return f"unexpected on-disk state validating against {config_name}: {message}"


def validate_on_disk(
    mc: MachineConfig, root: Root, unit_states: UnitFileStates | None = None
) -> ValidationReport:
    """Compare files, units and dropins of ``mc`` with what is under ``root``.

    With ``unit_states`` (the node's systemd), the ``enabled`` setting of each
    unit of a spec 3 config is checked too, as upstream does.
    """
    root = root.snapshot()
    check_enabled = unit_states is not None and not mc.ignition.version.startswith("2.")
    states = _AskedAhead(unit_states, _enablement_asked(mc)) if check_enabled else None
    mismatches: list[Mismatch] = []
    files_checked = 0
    for file in mc.ignition.files:
        if file.path in VALIDATION_IGNORED_PATHS:
            continue
        files_checked += 1
        if file.append:
            mismatches.append(
                Mismatch(
                    file.path,
                    DriftKind.FILE,
                    "found an append section when checking files. Append is not supported",
                )
            )
            continue
        try:
            data = file.contents.decode()
        except DecodeError as e:
            mismatches.append(
                Mismatch(
                    file.path,
                    DriftKind.FILE,
                    f"couldn't decode file {goquote(file.path)}: {e.detail}",
                )
            )
            continue
        problem = check_file(root, file.path, data, file.effective_mode)
        if problem:
            mismatches.append(Mismatch(file.path, DriftKind.FILE, problem))
    for path, problem in _unit_problems(mc, root, states):
        mismatches.append(Mismatch(path, DriftKind.UNIT, problem))
    return ValidationReport(mc.name, tuple(mismatches), files_checked, len(mc.ignition.units))


def _enablement_asked(mc: MachineConfig) -> list[str]:
    """The units whose ``enabled`` setting is checked (those with contents, not masked)."""
    return [
        u.name for u in mc.ignition.units if u.contents and not u.mask and u.enabled is not None
    ]


class _AskedAhead:
    """The unit file states of ``names``, asked of systemd (a D-Bus round trip each) on a
    thread of their own while the files are read and compared, instead of after them.
    An error is raised where the state is used, as if it had been asked there."""

    def __init__(self, unit_states: UnitFileStates | None, names: list[str]) -> None:
        self._states: dict[str, str | Exception] = {}
        self._thread: threading.Thread | None = None
        if unit_states is not None and names:
            self._thread = threading.Thread(
                target=self._ask, args=(unit_states, names), name="unit-states", daemon=True
            )
            self._thread.start()

    def _ask(self, unit_states: UnitFileStates, names: list[str]) -> None:
        for name in names:
            try:
                self._states[name] = unit_states.unit_file_state(name)
            except Exception as e:  # raised again where the state is used
                self._states[name] = e

    def unit_file_state(self, unit: str) -> str:
        if self._thread is not None:
            self._thread.join()
        state = self._states[unit]
        if isinstance(state, Exception):
            raise state
        return state


def _unit_problems(
    mc: MachineConfig, root: Root, unit_states: UnitFileStates | None
) -> Iterator[tuple[str, str]]:
    check_enabled = unit_states is not None
    for unit in mc.ignition.units:
        for dropin in unit.dropins:
            path = dropin_path(unit.name, dropin.name)
            if not dropin.contents and not _exists(root, path):
                continue
            problem = check_file(root, path, (dropin.contents or "").encode(), DEFAULT_FILE_MODE)
            if problem:
                yield path, problem
        path = unit_path(unit.name)
        if unit.mask:  # checked with or without contents (upstream returns early on none)
            problem = _check_mask(root, path)
        elif not unit.contents:
            problem = _check_unmasked(root, path) if unit.mask is False else ""
        else:
            problem = check_file(root, path, unit.contents.encode(), DEFAULT_FILE_MODE)
            if not problem and check_enabled and unit.enabled is not None:
                assert unit_states is not None
                problem = _check_enabled(unit.name, unit.enabled, unit_states)
        if problem:
            yield path, problem


def _check_enabled(name: str, enabled: bool, unit_states: UnitFileStates) -> str:
    state = unit_states.unit_file_state(name)
    wrong = NOT_ENABLED_STATES if enabled else ENABLED_STATES
    if state in wrong:
        want = "true" if enabled else "false"
        return f"unit {goquote(name)} expected enabled={want}, but systemd reports {goquote(state)}"
    return ""


def _exists(root: Root, path: str) -> bool:
    try:
        return root.exists(path)
    except (OSError, PathEscapeError):
        return True  # let check_file report why it cannot be read


def _check_mask(root: Root, path: str) -> str:
    try:
        root.lstat(path)  # a deleted mask: Go's EvalSymlinks fails on the missing path
        target = root.symlink_target(path)
    except (OSError, PathEscapeError) as e:
        return (
            "state validation: error while evaluation symlink for path "
            f"{goquote(path)}: {_go_error(e, path, 'lstat')}"
        )
    if target != DEV_NULL:
        return (
            f"state validation: invalid unit masked setting. path: {goquote(path)}; "
            f"expected: {DEV_NULL}; received: {target}"
        )
    return ""


def _check_unmasked(root: Root, path: str) -> str:
    """``mask: false`` with no contents: the unit's mask (a /dev/null symlink) must be gone."""
    try:
        target = root.symlink_target(path)
    except (OSError, PathEscapeError):
        return ""  # no symlink there: not masked
    if target == DEV_NULL:
        return (
            f"state validation: invalid unit masked setting. path: {goquote(path)}; "
            f"expected: not masked; received: {target}"
        )
    return ""


def check_file(root: Root, path: str, expected: bytes, mode: int) -> str:
    """Empty when ``path`` is a regular file with exactly ``mode`` and ``expected`` bytes."""
    try:
        host_path = root.host_path(path)  # resolved once for both lstat and read
        st = os.lstat(host_path)
    except (OSError, PathEscapeError) as e:
        return f"could not stat file {goquote(path)}: {_go_error(e, path, 'lstat')}"
    have = gomode.from_stat(st.st_mode)
    if have != mode:
        return (
            f"mode mismatch for file: {goquote(path)}; expected: {gomode.describe(mode)}; "
            f"received: {gomode.describe(have)}"
        )
    if st.st_size != len(expected):
        return f"content mismatch for file {goquote(path)}"
    try:
        data = read_nofollow(host_path, st.st_size)
    except (OSError, PathEscapeError) as e:
        return f"could not read file {goquote(path)}: {_go_error(e, path, 'open')}"
    if data != expected:
        return f"content mismatch for file {goquote(path)}"
    return ""


def _go_error(e: Exception, path: str, op: str = "") -> str:
    """Render an OS error the way Go's ``*PathError`` prints: ``lstat /etc/x: no such file``."""
    if isinstance(e, OSError) and e.strerror:
        text = e.strerror[0].lower() + e.strerror[1:]
        shown = printable(path)
        return f"{op} {shown}: {text}" if op else f"{shown}: {text}"
    return str(e)
