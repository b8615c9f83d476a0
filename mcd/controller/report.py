"""What one controller pass says about one pool: the rollout decision, the status it wrote and
the next maintenance window. The sync loop makes it; the metrics and `mcd status` read it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from mcd.model.pool.rollout import Rollout


@dataclass
class PoolReport:
    name: str
    rollout: Rollout
    status: dict[str, Any]
    next_window: datetime | None = None
