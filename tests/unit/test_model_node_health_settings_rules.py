"""The health gate's settings and messages at their edges (model/node/health): the settings
file and annotation grammar, durations, the Degraded reason, and which units a config
enables."""

from __future__ import annotations

import pytest

from mcd.model.errors import ConfigError
from mcd.model.node.health import (
    CheckResult,
    GateSettings,
    Status,
    enabled_units,
    gate_failed,
    parse_annotation,
    parse_duration,
    parse_file,
)

BASE = GateSettings()


def test_the_settings_file_ignores_comments_and_keeps_values_with_hashes_cut() -> None:
    text = "# the gate\n\ntimeout = 90 # a minute and a half\nkubelet_url = http://h/x#frag\n"
    got = parse_file(BASE, text, "/etc/mcd/health.conf")
    assert (got.timeout, got.kubelet_url, got.source) == (
        90.0,
        "http://h/x",
        "/etc/mcd/health.conf",
    )


def test_a_settings_line_without_equals_names_the_file_and_line() -> None:
    with pytest.raises(ConfigError) as e:
        parse_file(BASE, "# ok\ntimeout = 5\nbogus\n", "/etc/mcd/health.conf")
    assert str(e.value) == "/etc/mcd/health.conf:3: want key = value"


@pytest.mark.parametrize(
    ("value", "enabled", "timeout", "url"),
    [("off", False, 60.0, BASE.kubelet_url), (" ON ", True, 60.0, BASE.kubelet_url),
     ("timeout=30, enabled=no", False, 30.0, BASE.kubelet_url),
     ("kubelet_url=http://h/a=b", True, 60.0, "http://h/a=b")],
)  # fmt: skip
def test_the_annotation_is_on_off_or_key_value_pairs(
    value: str, enabled: bool, timeout: float, url: str
) -> None:
    got = parse_annotation(BASE, value, "annotation x")
    assert (got.enabled, got.timeout, got.kubelet_url) == (enabled, timeout, url)
    assert got.source == "annotation x"


@pytest.mark.parametrize(
    ("text", "seconds"), [("90", 90.0), ("90s", 90.0), ("10m", 600.0), ("1h", 3600.0),
                          (" 2H ", 7200.0), ("7d", None), ("0", None), ("x", None),
                          ("169h", None), ("168h", 604800.0), ("inf", None), ("m", None)],
)  # fmt: skip
def test_durations(text: str, seconds: float | None) -> None:
    if seconds is None:
        with pytest.raises(ConfigError) as e:
            parse_duration(text)
        assert str(e.value) == (
            f"invalid duration {text!r}: want e.g. 90s, 10m or 1h (at most 7 days)"
        )
    else:
        assert parse_duration(text) == seconds


def test_the_degraded_reason_names_the_config_the_check_and_why() -> None:
    failed = CheckResult("kubelet", Status.FAILED, "connection refused")
    assert gate_failed("rendered-w-2", failed) == (
        "health gate failed after update to rendered-w-2: check kubelet failed: connection refused"
    )
    assert gate_failed("rendered-w-2", CheckResult("units", Status.FAILED)) == (
        "health gate failed after update to rendered-w-2: check units failed"
    )


def test_only_enabled_unmasked_non_template_units_are_checked() -> None:
    units = [("b.service", True, False), ("a.service", True, False), ("m.service", True, True),
             ("off.service", False, False), ("none.service", None, False),
             ("getty@.service", True, False), ("getty@tty1.service", True, False),
             ("a.service", True, False)]  # fmt: skip
    assert enabled_units(units) == ["a.service", "b.service", "getty@tty1.service"]
