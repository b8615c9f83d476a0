"""``mcd plan --diff`` (model/planning/filediff): a unified diff with tabs kept and control
characters escaped, secrets by mode never shown, units and dropins without contents, and
the spec lines."""

from __future__ import annotations

import pytest

from mcd.model.planning.filediff import Entry, file_entries, looks_secret, spec_lines, unit_entries
from tests.builders import mc


def f(mode: int, text: str) -> dict[str, object]:
    return {"path": "/etc/x", "mode": mode, "contents": {"source": "data:," + text}}


def test_a_readable_file_shows_a_unified_diff_keeping_tabs_and_escaping_the_rest() -> None:
    old, new = mc("a", files=[f(0o644, "a%0Ab%0A")]), mc("b", files=[f(0o644, "a%0Ac%09d%1B%0A")])
    assert list(file_entries(old, new)) == [
        Entry("/etc/x", "changed", (), ("--- a(a)/etc/x\n", "+++ b(b)/etc/x\n",
                                        "@@ -1,2 +1,2 @@\n", " a\n", "-b\n", "+c\td\\x1b\n"))
    ]  # fmt: skip


@pytest.mark.parametrize(("mode", "secret"), [(0o644, False), (0o640, True), (0o641, True),
                                              (0o004, False), (0o600, True)])  # fmt: skip
def test_a_file_the_world_cannot_read_is_a_secret(mode: int, secret: bool) -> None:
    assert looks_secret("/etc/x", None, mode) is secret
    old, new = mc("a", files=[f(mode, "a")]), mc("b", files=[f(mode, "b")])
    [entry] = file_entries(old, new)
    assert (entry.details == ("secret contents changed (not shown)",)) is secret


def test_units_and_dropins_without_contents_diff_as_empty() -> None:
    old = mc("a", units=[{"name": "u.service", "contents": "x", "dropins": [{"name": "d.conf"}]}])
    new = mc("b", units=[{"name": "u.service", "contents": "x",
                          "dropins": [{"name": "d.conf", "contents": "y"}]},
                         {"name": "v.service"}])  # fmt: skip
    assert list(unit_entries(old, new)) == [
        Entry("/etc/systemd/system/u.service.d/d.conf", "changed", (),
              ("--- a(a)/etc/systemd/system/u.service.d/d.conf\n",
               "+++ b(b)/etc/systemd/system/u.service.d/d.conf\n", "@@ -0,0 +1 @@\n", "+y\n")),
        Entry("/etc/systemd/system/v.service", "added", ()),
    ]  # fmt: skip


def test_the_spec_lines_say_none_for_an_empty_side() -> None:
    assert spec_lines(mc("a", kernelArguments=["a"]), mc("b")) == ["kernelArguments: a -> (none)"]
    assert spec_lines(mc("a"), mc("b", kernelArguments=["b", "c"])) == [
        "kernelArguments: (none) -> b c"
    ]
