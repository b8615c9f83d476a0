"""``goquote``: Go's ``%q`` for the log lines that name a path (one per written file)."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from mcd.model.text import goquote


@given(st.text())
def test_goquote_is_the_escaping_json_quote_for_any_text(s: str) -> None:
    """The fast path for plain paths quotes exactly as the general one does."""
    assert goquote(s) == json.dumps(s, ensure_ascii=False)


def test_plain_and_awkward_paths_are_quoted_as_go_prints_them() -> None:
    assert goquote("/etc/bench/d1/f1.conf") == '"/etc/bench/d1/f1.conf"'
    assert goquote('/etc/a"b') == '"/etc/a\\"b"'
    assert goquote("/etc/a\\b") == '"/etc/a\\\\b"'
    assert goquote("/etc/a\nb") == '"/etc/a\\nb"'
