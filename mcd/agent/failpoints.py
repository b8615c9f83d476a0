"""Named points where the crash-matrix tests kill the agent (``MCD_CRASH_AT=<point>``).

Unset in production: :func:`reach` is then a dictionary lookup and nothing else.
A point may carry a count (``files:3`` = after the third file written).
"""

from __future__ import annotations

import os
import signal

ENV = "MCD_CRASH_AT"


def reach(point: str) -> None:
    """SIGKILL this process when ``MCD_CRASH_AT`` names ``point`` (no cleanup, like a power cut)."""
    if os.environ.get(ENV) == point:
        os.kill(os.getpid(), signal.SIGKILL)
