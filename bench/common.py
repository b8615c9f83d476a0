"""Shared helpers: timing and the printed table."""

from __future__ import annotations

import statistics
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

    @property
    def ratio(self) -> float:
        return self.figure / self.baseline if self.baseline else float("inf")


def print_table(rows: list[Row]) -> None:
    header = (
        f"{'benchmark':<44} {'figure':>10} {'baseline':>10} {'ratio':>7}  {'target':<22} result"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        scale = 1000 if r.unit == "ms" else 1
        digits = 1 if r.unit in ("ms", "MB", "req") else 2
        print(
            f"{r.name:<44} {r.figure * scale:>8.{digits}f}{r.unit:<2} "
            f"{r.baseline * scale:>8.{digits}f}{r.unit:<2} "
            f"{r.ratio:>6.2f}x  {r.target:<22} {'PASS' if r.passed else 'MISS'}"
        )
