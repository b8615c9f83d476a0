"""What a drain raises, and what the agent's update asks of a drainer."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

DEFAULT_TIMEOUT = 3600.0


class DrainError(Exception):
    """The drain did not complete; the message names what blocked it."""


class DrainAbandoned(DrainError):
    """The drain was given up because its target is no longer wanted (the message says why)."""


StillWanted = Callable[[], str]
"""Asked while a drain waits: '' to go on, else why the drain's target is no longer wanted."""


class Drainer(Protocol):
    def drain(self, config_name: str, still_wanted: StillWanted | None = None) -> None: ...

    def uncordon(self, config_name: str) -> None: ...
