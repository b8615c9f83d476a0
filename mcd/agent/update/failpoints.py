"""Named points where the fault-matrix tests break the agent.

``MCD_CRASH_AT=<point>`` kills it there; ``MCD_ENOSPC_AT=<point>`` makes the disk
"full" there (the fallback where the tests cannot mount a small tmpfs). Unset in
production: :func:`reach` is then two dictionary lookups and nothing else. A point
may carry a count (``files:3`` = after the third file written).
"""

from __future__ import annotations

import errno
import os
import signal

ENV = "MCD_CRASH_AT"
ENOSPC_ENV = "MCD_ENOSPC_AT"


def reach(point: str) -> None:
    """SIGKILL this process when ``MCD_CRASH_AT`` names ``point`` (no cleanup, like a power
    cut); raise ``ENOSPC`` when ``MCD_ENOSPC_AT`` names it."""
    if os.environ.get(ENV) == point:
        os.kill(os.getpid(), signal.SIGKILL)
    if os.environ.get(ENOSPC_ENV) == point:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
