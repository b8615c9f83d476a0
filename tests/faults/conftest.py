"""Fixtures of the e2e tests, and the fault matrix's table at the end of the run."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.e2e.conftest import make_node
from tests.faults.results import RESULTS

__all__ = ["make_node"]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not RESULTS:
        return
    write = terminalreporter.write_line
    failed = [r for r in terminalreporter.stats.get("failed", []) if "tests/faults" in r.nodeid]
    write("")
    write(f"fault matrix: {len(RESULTS)} cells passed, {len(failed)} failed")
    header = f"{'fault':<32} {'update':<11} {'outcome':<34} {'seconds':>7}"
    write(header)
    write("-" * len(header))
    for fault, kind, outcome, seconds in RESULTS:
        write(f"{fault:<32} {kind:<11} {outcome:<34} {seconds:>7.1f}")
    for outcome, count in Counter(r[2] for r in RESULTS).most_common():
        write(f"  {count:>3} x {outcome}")
    for report in failed:
        write(f"  FAILED {report.nodeid}")
