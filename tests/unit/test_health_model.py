"""The health gate's pure part (issue 19): settings from three sources, output summaries,
the reasons, the boot counter."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcd.model.errors import ConfigError
from mcd.model.node.health import (
    SUMMARY_CHARS,
    BootCount,
    CheckResult,
    GateSettings,
    Status,
    Verdict,
    boot_count_of,
    parse_annotation,
    parse_duration,
    parse_file,
    summarize,
)


def test_annotation_turns_the_gate_off_or_sets_fields() -> None:
    assert parse_annotation(GateSettings(), "off", "node").enabled is False
    s = parse_annotation(GateSettings(), "timeout=120, settle=0,max_boots=5", "pool")
    assert (s.timeout, s.settle, s.max_boots, s.source) == (120.0, 0.0, 5, "pool")
    assert parse_annotation(GateSettings(), "", "pool") == GateSettings()


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("timeout=-1", "node: timeout: want seconds between 0 and 86400, have '-1'"),
        ("timeout=nan", "node: timeout: want seconds"),
        ("max_boots=0", "node: max_boots: want 1 to 100, have '0'"),
        ("enabled=maybe", "node: enabled: want true or false, have 'maybe'"),
        ("kubelet_url=file:///etc/shadow", "node: kubelet_url: want an http(s) URL"),
        ("colour=blue", "node: unknown setting 'colour'"),
        ("timeout", "node: want key=value, have 'timeout'"),
    ],
)
def test_a_bad_setting_is_one_line_naming_where_and_which_field(value: str, message: str) -> None:
    with pytest.raises(ConfigError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        parse_annotation(GateSettings(), value, "node")


def test_the_file_has_comments_and_names_its_line() -> None:
    text = "# node's own\nenabled = true\n\ncheck_timeout = 5  # seconds\n"
    s = parse_file(GateSettings(timeout=9), text, "/etc/mcd/health.conf")
    assert (s.enabled, s.check_timeout, s.timeout) == (True, 5.0, 9.0)
    with pytest.raises(ConfigError, match=r"^/etc/mcd/health.conf:2: want key = value$"):
        parse_file(GateSettings(), "enabled = true\nbogus\n", "/etc/mcd/health.conf")


def test_summary_keeps_first_and_last_lines_and_escapes_control_characters() -> None:
    out = "\n".join(f"l{i}" for i in range(10)) + "\n\x1b[2Jend\r\n"
    assert summarize(out) == "l0 | l1 | l2 | ... | l8 | l9 | \\x1b[2Jend"


@given(st.text())
def test_a_summary_is_bounded_and_printable(text: str) -> None:
    out = summarize(text)
    assert len(out) <= SUMMARY_CHARS
    assert all(c.isprintable() for c in out)
    assert "\n" not in out


def test_the_reason_names_the_first_failed_check() -> None:
    verdict = Verdict("rendered-worker-2", (
        CheckResult("units", Status.PASSED),
        CheckResult("required.d/10-net", Status.FAILED, "exit status 1: no route"),
    ))  # fmt: skip
    assert not verdict.ok
    assert verdict.reason() == (
        "health gate failed after update to rendered-worker-2: check required.d/10-net failed: "
        "exit status 1: no route"
    )
    assert Verdict("x", (CheckResult("kubelet", Status.SKIPPED, "offline"),)).reason() == ""


def test_the_boot_counter_counts_each_boot_once_and_starts_over_for_another_config() -> None:
    count = BootCount("").add("rendered-2", "boot-a").add("rendered-2", "boot-a")
    assert count.boots == 1 and not count.exhausted(3)
    count = count.add("rendered-2", "boot-b").add("rendered-2", "boot-c")
    assert count.boots == 3 and count.exhausted(3)
    assert count.add("rendered-3", "boot-d").boots == 1
    assert boot_count_of(count.as_dict()) == count
    with pytest.raises(ConfigError):
        boot_count_of({"config": "x", "boot_ids": [1]})


@pytest.mark.parametrize(("text", "seconds"), [("90", 90), ("90s", 90), ("10m", 600), ("1h", 3600)])
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "0", "-5m", "10x", "8d", "inf"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(ConfigError, match="invalid duration"):
        parse_duration(text)
