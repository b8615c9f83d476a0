"""How long a test waits for what it expects to happen. A wait ends as soon as its check
holds, so a longer limit costs time only when the test fails anyway; CI runs on a busy
2-core machine, where an agent's interpreter alone can take seconds to start, so its limits
are three times the ones written in the tests (``MCD_TEST_PATIENCE`` overrides the factor)."""

from __future__ import annotations

import os


def _factor() -> float:
    given = os.environ.get("MCD_TEST_PATIENCE", "")
    if given:
        return max(1.0, float(given))
    return 3.0 if os.environ.get("CI") else 1.0


FACTOR = _factor()


def patient(seconds: float) -> float:
    """The limit to wait for something a test expects within ``seconds`` on a quiet machine."""
    return seconds * FACTOR
