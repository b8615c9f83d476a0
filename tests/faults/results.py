"""The fault matrix's rows, collected by the tests and printed by the conftest at the end."""

from __future__ import annotations

# (fault, update kind, outcome, seconds)
RESULTS: list[tuple[str, str, str, float]] = []
