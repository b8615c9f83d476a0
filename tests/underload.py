"""Probing a listener while an attack runs beside it: the one loop the listener attack tests
share (``tests/unit/test_listener_attacks.py``, ``tests/integration/test_server_attacks.py``)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


def probing_while(
    attack: Callable[[], None], probe: Callable[[], int], seconds: float, every: float
) -> int:
    """Run ``attack`` in a thread and ``probe`` every ``every`` seconds for ``seconds``; every
    probe must answer 200 and the attack must end without an error. The probes made."""
    errors: list[BaseException] = []

    def run() -> None:
        try:
            attack()
        except BaseException as e:
            errors.append(e)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    end, probes = time.monotonic() + seconds, 0
    try:
        while time.monotonic() < end:
            assert probe() == 200, "the probe was not answered"
            probes += 1
            time.sleep(every)
    finally:
        t.join(60)
    assert not errors, errors
    return probes
