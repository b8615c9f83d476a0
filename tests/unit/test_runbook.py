"""Every reason string mcd can produce (extracted from the source) appears in the runbook."""

from __future__ import annotations

from pathlib import Path

from tests.unit.reasons import reason_strings

RUNBOOK = Path(__file__).resolve().parents[2] / "docs" / "runbook.md"


def test_every_reason_is_in_the_runbook() -> None:
    text = RUNBOOK.read_text()
    reasons = reason_strings()
    assert len(reasons) > 60  # the extraction itself works
    missing = {r: where for r, where in reasons.items() if r not in text}
    assert not missing, "reasons missing from docs/runbook.md:\n" + "\n".join(
        f"  {where}: {r!r}" for r, where in sorted(missing.items(), key=lambda kv: kv[1])
    )
