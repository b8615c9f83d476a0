"""Run every benchmark and print figure, baseline, ratio and target: ``python -m bench.report``."""

from __future__ import annotations

import logging
import sys
import tempfile
from pathlib import Path

from bench.agent import bench_idle, bench_update_latency
from bench.cluster import bench_drain, bench_update_requests
from bench.common import print_table
from bench.engine import bench_plan, bench_validate
from bench.host import bench_apply_files


def main() -> None:
    logging.getLogger("mcd").setLevel(logging.ERROR)  # a stopped fake server ends watches
    rows = [
        bench_plan(),
        bench_validate(),
        bench_apply_files(),
        bench_update_requests(),
        bench_drain(),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        rows.append(bench_update_latency(Path(tmp) / "latency-100", files=100))
        rows.append(bench_update_latency(Path(tmp) / "latency-1000", files=1000, rounds=3))
        rows.extend(bench_idle(Path(tmp) / "idle"))
    print_table(rows)
    sys.exit(0 if all(r.passed for r in rows) else 1)


if __name__ == "__main__":
    main()
