"""Maintenance windows (the pool annotation ``mcd-project.github.io/maintenance-window``): what
a window accepts, each refusal naming its field, and when a window is open, closes and opens
next, at the edges (start inclusive, end exclusive) and across midnight and DST."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcd.model.pool.windows import (
    DAYS,
    Window,
    WindowError,
    WindowState,
    parse_duration,
    parse_window,
    window_state,
)

PREFIX = "annotation mcd-project.github.io/maintenance-window: "
UTC_ZONE = ZoneInfo("UTC")


def refusal(text: str) -> str:
    with pytest.raises(WindowError) as e:
        parse_window(text)
    message = str(e.value)
    assert message.startswith(PREFIX)
    return message.removeprefix(PREFIX)


def test_the_defaults_every_day_utc_and_rebootless_anytime() -> None:
    assert parse_window('{"start": "2:05", "duration": "90m"}') == Window(
        days=tuple(range(7)),
        start=time(2, 5),
        duration=timedelta(minutes=90),
        time_zone="UTC",
        rebootless_anytime=True,
    )


def test_days_in_any_case_short_or_full_once_each_in_week_order() -> None:
    window = parse_window(
        '{"days": ["sunday", " Sat ", "MON", "Monday"], "start": "23:59", "duration": "1d2h3m4s",'
        ' "timeZone": "Europe/Berlin", "rebootless": "window"}'
    )
    assert window == Window(
        days=(0, 5, 6),
        start=time(23, 59),
        duration=timedelta(days=1, hours=2, minutes=3, seconds=4),
        time_zone="Europe/Berlin",
        rebootless_anytime=False,
    )


@pytest.mark.parametrize(
    ("value", "duration"),
    [("45s", timedelta(seconds=45)), ("90m", timedelta(minutes=90)),
     ("1h30m", timedelta(minutes=90)), ("7d", timedelta(days=7)), ("2d", timedelta(days=2)),
     ("1h1s", timedelta(hours=1, seconds=1))],
)  # fmt: skip
def test_durations(value: str, duration: timedelta) -> None:
    assert parse_duration(value) == duration


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[1]", "value: expected an object"),
        ('{"start": "02:00", "duration": "1h", "zone": "UTC", "at": 1}',
         "at: unknown field; expected one of days, duration, rebootless, start, timeZone"),
        ('{"days": [], "start": "02:00", "duration": "1h"}',
         "days: expected a non-empty list of Mon, Tue, ... Sun"),
        ('{"days": "Mon", "start": "02:00", "duration": "1h"}',
         "days: expected a non-empty list of Mon, Tue, ... Sun"),
        ('{"days": ["Mon", 1], "start": "02:00", "duration": "1h"}',
         "days: unknown day 1; expected Mon, Tue, ... Sun"),
        ('{"days": ["Mo"], "start": "02:00", "duration": "1h"}',
         "days: unknown day 'Mo'; expected Mon, Tue, ... Sun"),
        ('{"duration": "1h"}', "start: expected HH:MM, got None"),
        ('{"start": 120, "duration": "1h"}', "start: expected HH:MM, got 120"),
        ('{"start": "24:00", "duration": "1h"}', "start: expected HH:MM, got '24:00'"),
        ('{"start": "02:60", "duration": "1h"}', "start: expected HH:MM, got '02:60'"),
        ('{"start": "02:00"}',
         "duration: expected a duration such as 90m, 4h or 1h30m, got None"),
        ('{"start": "02:00", "duration": ""}',
         "duration: expected a duration such as 90m, 4h or 1h30m, got ''"),
        ('{"start": "02:00", "duration": 60}',
         "duration: expected a duration such as 90m, 4h or 1h30m, got 60"),
        ('{"start": "02:00", "duration": "0h"}', "duration: must be more than 0 and at most 7 days"),
        ('{"start": "02:00", "duration": "7d1s"}',
         "duration: must be more than 0 and at most 7 days"),
        ('{"start": "02:00", "duration": "1h", "timeZone": ""}',
         "timeZone: expected an IANA time zone name such as Europe/Berlin"),
        ('{"start": "02:00", "duration": "1h", "timeZone": 2}',
         "timeZone: expected an IANA time zone name such as Europe/Berlin"),
        ('{"start": "02:00", "duration": "1h", "rebootless": "Window"}',
         "rebootless: expected anytime or window, got 'Window'"),
    ],
)  # fmt: skip
def test_a_bad_window_is_refused_naming_the_field(text: str, message: str) -> None:
    assert refusal(text) == message


def test_a_document_that_does_not_parse_is_one_line() -> None:
    message = refusal('{"start": "02:00",\n "duration": [}')
    assert message.startswith("value: not JSON or YAML: ")
    assert "\n" not in message


def test_a_window_of_minutes_or_seconds_alone() -> None:
    assert parse_window('{"start": "02:00", "duration": "30m"}').duration == timedelta(minutes=30)
    assert parse_window('{"start": "02:00", "duration": "59s"}').duration == timedelta(seconds=59)


# -- open or closed --------------------------------------------------------------------------

SAT_0200 = Window(days=(5,), start=time(2, 0), duration=timedelta(hours=4))


def at(year: int, month: int, day: int, hour: int, minute: int) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


def test_the_start_is_inside_the_window_and_the_end_outside() -> None:
    # Saturday 2026-11-28 02:00 to 06:00 UTC
    opened = window_state(SAT_0200, at(2026, 11, 28, 2, 0), UTC_ZONE)
    assert opened == WindowState(True, None, datetime(2026, 11, 28, 6, 0, tzinfo=UTC_ZONE))
    assert opened.describe() == "maintenance window open until 2026-11-28T06:00+00:00"
    assert window_state(SAT_0200, at(2026, 11, 28, 5, 59), UTC_ZONE).open
    closed = window_state(SAT_0200, at(2026, 11, 28, 6, 0), UTC_ZONE)
    assert closed == WindowState(False, datetime(2026, 12, 5, 2, 0, tzinfo=UTC_ZONE), None)
    before = window_state(SAT_0200, at(2026, 11, 28, 1, 59), UTC_ZONE)
    assert before.opens_at == datetime(2026, 11, 28, 2, 0, tzinfo=UTC_ZONE)


def test_the_next_opening_is_the_nearest_of_the_days() -> None:
    window = Window(days=(0, 3), start=time(22, 0), duration=timedelta(hours=1))  # Mon, Thu
    tuesday = window_state(window, at(2026, 11, 24, 12, 0), UTC_ZONE)
    assert tuesday.opens_at == datetime(2026, 11, 26, 22, 0, tzinfo=UTC_ZONE)  # Thursday
    friday = window_state(window, at(2026, 11, 27, 12, 0), UTC_ZONE)
    assert friday.opens_at == datetime(2026, 11, 30, 22, 0, tzinfo=UTC_ZONE)  # next Monday


def test_a_seven_day_window_opened_last_week_is_still_open() -> None:
    week = Window(days=(0,), start=time(0, 0), duration=timedelta(days=7))
    sunday_night = window_state(week, at(2026, 11, 29, 23, 59), UTC_ZONE)  # Mon 23rd + 6d23h59m
    assert sunday_night.open
    assert sunday_night.closes_at == datetime(2026, 11, 30, 0, 0, tzinfo=UTC_ZONE)


def test_the_start_is_local_time_and_the_duration_elapsed_time_across_dst() -> None:
    berlin = ZoneInfo("Europe/Berlin")
    # Sunday 2026-03-29: clocks go from 02:00 to 03:00 CET->CEST; a 01:00 window of 2h
    window = Window(days=(6,), start=time(1, 0), duration=timedelta(hours=2), time_zone="x")
    opened = window_state(window, at(2026, 3, 29, 0, 30), berlin)  # 01:30 CET
    assert opened.open
    assert opened.closes_at is not None
    assert opened.closes_at.astimezone(UTC) == at(2026, 3, 29, 2, 0)  # two real hours
    assert opened.describe() == "maintenance window open until 2026-03-29T04:00+02:00"


def test_a_state_with_no_next_opening_says_only_closed() -> None:
    assert WindowState(False, None, None).describe() == "maintenance window closed"
    assert WindowState(True, None, None).describe() == "maintenance window closed"


@settings(max_examples=25)
@given(
    st.sets(st.integers(0, 6), min_size=1),
    st.integers(0, 23),
    st.integers(1, 7 * 24 * 60),
    st.datetimes(min_value=datetime(2026, 1, 1), max_value=datetime(2027, 1, 1)),
)
def test_open_exactly_when_now_falls_in_some_window(
    days: set[int], hour: int, minutes: int, naive: datetime
) -> None:
    window = Window(
        days=tuple(sorted(days)), start=time(hour, 0), duration=timedelta(minutes=minutes)
    )
    now = naive.replace(tzinfo=UTC)
    state = window_state(window, now, UTC_ZONE)
    starts = [
        datetime.combine(now.date() + timedelta(days=k), window.start, tzinfo=UTC)
        for k in range(-8, 9)
        if (now.date() + timedelta(days=k)).weekday() in days
    ]
    inside = [s for s in starts if s <= now < s + window.duration]
    assert state.open is bool(inside)
    if state.open:
        assert state.closes_at in [s + window.duration for s in inside]
    else:
        assert state.opens_at == min(s for s in starts if s > now)
        assert DAYS[state.opens_at.weekday()] in [DAYS[d] for d in days]
