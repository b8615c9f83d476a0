"""Run every benchmark and print figure, baseline, ratio and target: ``python -m bench.report``."""

from __future__ import annotations

from bench.common import print_table
from bench.engine import bench_plan, bench_validate
from bench.host import bench_apply_files


def main() -> None:
    rows = [bench_plan(), bench_validate(), bench_apply_files()]
    print_table(rows)


if __name__ == "__main__":
    main()
