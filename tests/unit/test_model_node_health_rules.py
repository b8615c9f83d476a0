"""Health-gate settings and words an admin meets: the limits of each setting (at the edges),
the settings file's comments, a check's output summarised, the verdict as ``mcd status``
shows it, and the boot counter read back from its file."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcd.model.errors import ConfigError
from mcd.model.node.health import (
    BootCount,
    CheckResult,
    GateSettings,
    Status,
    Verdict,
    apply_pairs,
    boot_count_of,
    parse_annotation,
    parse_duration,
    parse_file,
    summarize,
)

BASE = GateSettings()


def refused(pairs: dict[str, str]) -> str:
    with pytest.raises(ConfigError) as e:
        apply_pairs(BASE, pairs, "node annotation")
    return str(e.value)


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("max_boots", "1", 1),
        ("max_boots", "100", 100),
        ("kubelet_url", "http://localhost:10248/healthz", "http://localhost:10248/healthz"),
        ("kubelet_url", "https://10.0.0.1:10250/healthz", "https://10.0.0.1:10250/healthz"),
        ("kubelet_url", "http://" + "a" * 505, "http://" + "a" * 505),  # 512 characters
        ("timeout", "0", 0.0),
        ("timeout", "86400", 86400.0),
        ("settle", " 2.5 ", 2.5),
        ("enabled", "Yes", True),
        ("enabled", "OFF", False),
    ],
)
def test_settings_at_their_limits_are_accepted(key: str, value: str, expected: object) -> None:
    changed = apply_pairs(BASE, {key: value}, "node annotation")
    assert getattr(changed, key) == expected
    assert changed.source == "node annotation"


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("max_boots", "0", "node annotation: max_boots: want 1 to 100, have '0'"),
        ("max_boots", "101", "node annotation: max_boots: want 1 to 100, have '101'"),
        ("max_boots", "-1", "node annotation: max_boots: want 1 to 100, have '-1'"),
        ("kubelet_url", "ftp://x", "node annotation: kubelet_url: want an http(s) URL, have 'ftp://x'"),
        ("kubelet_url", "HTTP://x", "node annotation: kubelet_url: want an http(s) URL, have 'HTTP://x'"),
        ("kubelet_url", "http://" + "a" * 506,
         f"node annotation: kubelet_url: want an http(s) URL, have 'http://{'a' * 506}'"),
        ("timeout", "86401", "node annotation: timeout: want seconds between 0 and 86400, have '86401'"),
        ("timeout", "-1", "node annotation: timeout: want seconds between 0 and 86400, have '-1'"),
        ("settle", "nan", "node annotation: settle: want seconds between 0 and 86400, have 'nan'"),
        ("check_timeout", "soon",
         "node annotation: check_timeout: want seconds between 0 and 86400, have 'soon'"),
        ("enabled", "maybe", "node annotation: enabled: want true or false, have 'maybe'"),
        ("color", "red", "node annotation: unknown setting 'color' (known: enabled, timeout, "
                         "check_timeout, settle, kubelet_url, max_boots)"),
    ],
)  # fmt: skip
def test_a_setting_out_of_range_is_refused_in_one_line(key: str, value: str, message: str) -> None:
    assert refused({key: value}) == message


def test_no_setting_keeps_the_source() -> None:
    assert apply_pairs(BASE, {}, "pool annotation") is BASE
    assert parse_annotation(BASE, " , ", "pool annotation") is BASE


def test_the_settings_file_keeps_the_text_after_the_first_equals_and_drops_comments() -> None:
    text = "# gate\ntimeout = 120 # two minutes\n\nkubelet_url = http://h/healthz?a=b\n"
    got = parse_file(BASE, text, "/etc/mcd/health.conf")
    assert (got.timeout, got.kubelet_url) == (120.0, "http://h/healthz?a=b")
    assert got.source == "/etc/mcd/health.conf"
    with pytest.raises(ConfigError) as e:
        parse_file(BASE, "timeout = 1\nsettle 2\n", "/etc/mcd/health.conf")
    assert str(e.value) == "/etc/mcd/health.conf:2: want key = value"
    with pytest.raises(ConfigError) as e:
        parse_file(BASE, "color = red\n", "/etc/mcd/health.conf")
    assert str(e.value).startswith("/etc/mcd/health.conf: unknown setting 'color'")


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90", 90.0), ("90s", 90.0), ("10m", 600.0), ("1H", 3600.0), (" 2.5m ", 150.0),
     ("168h", 604800.0), ("0.5", 0.5)],
)  # fmt: skip
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["0", "0s", "-1m", "169h", "604801", "inf", "1d", "m", ""])
def test_a_duration_out_of_range_names_the_text(text: str) -> None:
    with pytest.raises(ConfigError) as e:
        parse_duration(text)
    assert str(e.value) == (f"invalid duration {text!r}: want e.g. 90s, 10m or 1h (at most 7 days)")


def test_a_short_output_is_kept_whole_on_one_line() -> None:
    assert summarize("one\n\n  two  \nthree\nfour\nfive\nsix\n") == (
        "one | two | three | four | five | six"
    )
    assert summarize("1\n2\n3\n4\n5\n6\n7") == "1 | 2 | 3 | ... | 5 | 6 | 7"
    assert summarize("a\x1b[31mb\r") == "a\\x1b[31mb"


def test_a_long_output_is_cut_to_the_limit_with_an_ellipsis() -> None:
    assert summarize("x" * 400) == "x" * 400
    assert summarize("x" * 401) == "x" * 397 + "..."
    assert summarize("abcdef", limit=5) == "ab..."


@settings(max_examples=50)
@given(st.text(max_size=600), st.integers(1, 5), st.integers(10, 500))
def test_a_summary_never_passes_its_limit(output: str, lines: int, limit: int) -> None:
    text = summarize(output, lines, limit)
    assert len(text) <= limit
    assert "\n" not in text


def test_the_verdict_as_mcd_status_shows_it() -> None:
    verdict = Verdict(
        "rendered-2",
        (
            CheckResult("kubelet", Status.PASSED, seconds=0.12345),
            CheckResult("10-probe", Status.FAILED, "exit status 1: boom", 2.0004),
            CheckResult("node-ready", Status.SKIPPED, "no API server"),
        ),
    )
    assert verdict.as_dict() == {
        "config": "rendered-2",
        "ok": False,
        "checks": [
            {"name": "kubelet", "status": "passed", "note": "", "seconds": 0.123},
            {"name": "10-probe", "status": "failed", "note": "exit status 1: boom",
             "seconds": 2.0},
            {"name": "node-ready", "status": "skipped", "note": "no API server", "seconds": 0.0},
        ],
    }  # fmt: skip
    assert verdict.reason() == (
        "health gate failed after update to rendered-2: check 10-probe failed: exit status 1: boom"
    )
    assert Verdict("rendered-2", (CheckResult("kubelet", Status.PASSED),)).reason() == ""


def test_the_boot_counter_reads_back_what_it_wrote() -> None:
    count = BootCount("rendered-2").add("rendered-2", "b1").add("rendered-2", "b2")
    assert boot_count_of(count.as_dict()) == count
    assert count.exhausted(2) and not count.exhausted(3)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"config": "c"}, "want config (string) and boot_ids (list)"),
        ({"boot_ids": []}, "want config (string) and boot_ids (list)"),
        ({"config": 1, "boot_ids": []}, "want config (string) and boot_ids (list)"),
        ({"config": "c", "boot_ids": "b1"}, "want config (string) and boot_ids (list)"),
        ({"config": "c", "boot_ids": ["b1", 2]}, "boot_ids: want strings"),
    ],
)
def test_a_damaged_boot_counter_is_refused(data: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as e:
        boot_count_of(data)
    assert str(e.value) == message
