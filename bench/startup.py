"""Start-up of the commands that need no cluster, beside ``python -c "import click, yaml"``.

Each figure is the median wall time of the whole process (interpreter start included), run
alternately with the baseline in the same run, so load hits both alike. ``mcd --help`` must
start within 1.5x of the baseline and ``plan``, ``validate`` and ``diff`` on the bundled
examples finish within 2x: none of them imports the cluster client or the agent.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.common import Row, paired, ratio_check

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
HELP_RATIO = 1.5
COMMAND_RATIO = 2.0
LOAD_HEADROOM = 1.5
"""``make test`` allows this much more on each ratio (load spreads subprocess start-up)."""


def mcd_command() -> list[str]:
    script = Path(sys.executable).parent / "mcd"
    return [str(script)] if script.exists() else [sys.executable, "-m", "mcd"]


def _run(argv: list[str]) -> None:
    env = {**os.environ, "NO_COLOR": "1"}
    done = subprocess.run(
        argv, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env
    )
    if done.returncode != 0:
        raise AssertionError(f"{argv}: exit {done.returncode}: {done.stderr.decode()[-500:]}")


def _row(name: str, argv: list[str], limit: float, repeat: int = 7) -> Row:
    def baseline() -> None:
        _run([sys.executable, "-c", "import click, yaml"])

    def engine() -> None:
        _run(argv)

    engine()  # warm the page cache for both
    baseline()
    figure, base = paired(engine, baseline, repeat=repeat)
    target, passed = ratio_check(figure, base, limit)
    load_target, load_passed = ratio_check(figure, base, limit * LOAD_HEADROOM)
    return Row(name, figure, base, target, passed, load_target=load_target, load_passed=load_passed)


def bench_startup() -> list[Row]:
    mcd = mcd_command()
    one, two = str(EXAMPLES / "rendered-worker-1.yaml"), str(EXAMPLES / "rendered-worker-2.yaml")
    with tempfile.TemporaryDirectory(prefix="mcd-bench-startup-") as tmp:
        root = Path(tmp) / "root"
        _run([*mcd, "once-from", one, "--root", str(root), "--skip-reboot"])
        rows = [
            _row("start-up: mcd --help", [*mcd, "--help"], HELP_RATIO),
            _row("start-up: mcd plan (examples)", [*mcd, "plan", one, two], COMMAND_RATIO),
            _row(
                "start-up: mcd validate (example, offline root)",
                [*mcd, "validate", one, "--root", str(root)],
                COMMAND_RATIO,
            ),
            _row("start-up: mcd diff (examples)", [*mcd, "diff", one, two], COMMAND_RATIO),
        ]
        shutil.rmtree(root, ignore_errors=True)
    return rows


if __name__ == "__main__":
    from bench.common import print_table

    print_table(bench_startup())
