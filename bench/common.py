"""Shared helpers: timing, rows with their two kinds of target, and the printed table.

Every row carries two checks:

* ``target``/``passed``: what ``make bench`` demands, absolute times included; a miss fails it;
* ``load_target``/``load_passed``: what ``make test`` demands. Only ratios to a baseline
  measured in the same run (or counts, which load cannot change), each with headroom, so a
  busy machine can never fail the test command; never an absolute time.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass


def best_of(fn: Callable[[], object], repeat: int = 5) -> float:
    """Median wall time of ``repeat`` runs, in seconds."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def paired(
    engine: Callable[[], object],
    baseline: Callable[[], object],
    repeat: int = 4,
    stat: Callable[[list[float]], float] = statistics.median,
) -> tuple[float, float]:
    """``stat`` (median; ``min`` for fsync-bound work, whose outliers are disk stalls, not
    the code) of ``engine`` and ``baseline`` run alternately, so drift hits both alike."""
    engine_times: list[float] = []
    baseline_times: list[float] = []
    for _ in range(repeat):
        for fn, times in ((engine, engine_times), (baseline, baseline_times)):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
    return stat(engine_times), stat(baseline_times)


@dataclass(frozen=True)
class Row:
    name: str
    figure: float
    baseline: float
    target: str
    passed: bool
    unit: str = "ms"  # "ms": figures are seconds, printed in ms; otherwise plain counts
    load_target: str = ""
    """The check ``make test`` applies: a ratio with headroom, or a count ("" = none)."""
    load_passed: bool = True

    @property
    def ratio(self) -> float:
        return self.figure / self.baseline if self.baseline else float("inf")

    def ok(self, load_tolerant: bool) -> bool:
        return self.load_passed if load_tolerant else self.passed


def ratio_check(figure: float, baseline: float, limit: float) -> tuple[str, bool]:
    """``figure <= limit x baseline``, as (target text, passed)."""
    return f"<= {limit:g}x baseline", figure <= limit * baseline


def with_load_check(row: Row, limit: float) -> Row:
    """``row`` plus the load-tolerant check ``make test`` applies: ratio <= ``limit``."""
    text, ok = ratio_check(row.figure, row.baseline, limit)
    return Row(row.name, row.figure, row.baseline, row.target, row.passed, row.unit, text, ok)


def progress(message: str) -> None:
    """One line on stderr while a long step runs, so a slow machine is seen working."""
    print(message, file=sys.stderr, flush=True)


def print_table(rows: list[Row], load_tolerant: bool = False) -> None:
    """The table. ``load_tolerant``: the targets shown and judged are ``make test``'s."""
    header = (
        f"{'benchmark':<48} {'figure':>10} {'baseline':>10} {'ratio':>7}  {'target':<26} result"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        scale = 1000 if r.unit == "ms" else 1
        digits = 1 if r.unit in ("ms", "MB", "req") else 2
        target = (r.load_target or "(report only)") if load_tolerant else r.target
        print(
            f"{r.name:<48} {r.figure * scale:>8.{digits}f}{r.unit:<2} "
            f"{r.baseline * scale:>8.{digits}f}{r.unit:<2} "
            f"{r.ratio:>6.2f}x  {target:<26} {'PASS' if r.ok(load_tolerant) else 'MISS'}"
        )
