"""Maintenance windows per pool (beyond upstream). Pure: the caller passes the clock and the
time zone object.

A pool opts in with the annotation ``mcd-project.github.io/maintenance-window``, a JSON
(or YAML) object::

    {"days": ["Sat", "Sun"], "start": "02:00", "duration": "4h",
     "timeZone": "Europe/Berlin", "rebootless": "anytime"}

* ``days``: the days a window starts on (``Mon`` .. ``Sun``; default every day);
* ``start``: local ``HH:MM`` in ``timeZone`` (IANA name, default ``UTC``);
* ``duration``: ``90m``, ``4h``, ``1h30m``, ``45s`` (at most 7 days);
* ``rebootless``: ``anytime`` (default) lets updates that need no drain and no reboot
  start outside the window; ``window`` holds them for the window as well.

An update that drains or reboots (by ``mcd plan``'s cost) starts only while a window
is open; one already started when the window closes finishes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta, tzinfo
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import yaml

WINDOW_ANNOTATION = "mcd-project.github.io/maintenance-window"
DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_DURATION = re.compile(r"^(?:(\d{1,9})d)?(?:(\d{1,9})h)?(?:(\d{1,9})m)?(?:(\d{1,9})s)?$")
_START = re.compile(r"^([01]?\d|2[0-3]):([0-5]\d)$")
MAX_TEXT = 4096
"""The longest annotation read (a window needs a few dozen characters)."""
_KEYS = frozenset({"days", "start", "duration", "timeZone", "rebootless"})


class WindowError(ValueError):
    """A maintenance window annotation that cannot be used; the text names the field."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"annotation {WINDOW_ANNOTATION}: {field}: {message}")


@dataclass(frozen=True)
class Window:
    days: tuple[int, ...]  # 0 = Monday
    start: time
    duration: timedelta
    time_zone: str = "UTC"
    rebootless_anytime: bool = True


@dataclass(frozen=True)
class WindowState:
    open: bool
    opens_at: datetime | None
    """When closed: when the next window opens."""
    closes_at: datetime | None
    """When open: when this window closes."""

    def describe(self) -> str:
        if self.open and self.closes_at is not None:
            return f"maintenance window open until {_iso(self.closes_at)}"
        if self.opens_at is not None:
            return f"maintenance window closed; next opens at {_iso(self.opens_at)}"
        return "maintenance window closed"


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="minutes")


class _NoAliases(yaml.SafeLoader):
    """Safe YAML that refuses aliases: a few bytes of ``*a`` could expand to megabytes."""

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
            raise yaml.composer.ComposerError(None, None, "aliases are not allowed", mark)
        return super().compose_node(parent, index)


def annotation_object(
    text: str, keys: frozenset[str], error: Callable[[str, str], ValueError]
) -> dict[Any, Any]:
    """A pool annotation's JSON or YAML object, bounded (size, no aliases, depth), with no key
    but ``keys``; ``error(field, message)`` is the refusal, naming the field."""
    if len(text) > MAX_TEXT:
        raise error("value", f"longer than {MAX_TEXT} characters")
    try:
        doc = yaml.load(text, Loader=_NoAliases)
    except yaml.YAMLError as e:
        first = str(e).splitlines()[0][:200]
        raise error("value", f"not JSON or YAML: {first}") from None
    except RecursionError:
        raise error("value", "nested too deeply") from None
    if not isinstance(doc, dict):
        raise error("value", "expected an object")
    unknown = sorted(str(k) for k in doc if k not in keys)
    if unknown:
        raise error(unknown[0][:64], f"unknown field; expected one of {', '.join(sorted(keys))}")
    return doc


def parse_window(text: str) -> Window:
    doc = annotation_object(text, _KEYS, WindowError)
    days_value = doc.get("days", list(DAYS))
    if not isinstance(days_value, list) or not days_value:
        raise WindowError("days", "expected a non-empty list of Mon, Tue, ... Sun")
    days = [_day(d) for d in days_value]
    start_value = doc.get("start")
    match = _START.match(str(start_value)) if isinstance(start_value, str) else None
    if match is None:
        raise WindowError("start", f"expected HH:MM, got {_short(start_value)}")
    duration = parse_duration(doc.get("duration"))
    zone = doc.get("timeZone", "UTC")
    if not isinstance(zone, str) or not zone:
        raise WindowError("timeZone", "expected an IANA time zone name such as Europe/Berlin")
    rebootless = doc.get("rebootless", "anytime")
    if rebootless not in ("anytime", "window"):
        raise WindowError("rebootless", f"expected anytime or window, got {_short(rebootless)}")
    return Window(
        days=tuple(sorted(set(days))),
        start=time(int(match.group(1)), int(match.group(2))),
        duration=duration,
        time_zone=zone,
        rebootless_anytime=rebootless == "anytime",
    )


_FULL = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


def _day(value: object) -> int:
    key = value.strip().lower() if isinstance(value, str) else ""
    for i, (short, full) in enumerate(zip(DAYS, _FULL, strict=True)):
        if key in (short.lower(), full):
            return i
    raise WindowError("days", f"unknown day {_short(value)}; expected Mon, Tue, ... Sun")


def parse_duration(value: object) -> timedelta:
    match = _DURATION.match(value) if isinstance(value, str) and value else None
    if match is None or not any(match.groups()):
        expected = "expected a duration such as 90m, 4h or 1h30m"
        raise WindowError("duration", f"{expected}, got {_short(value)}")
    d, h, m, sec = (int(g or 0) for g in match.groups())
    seconds = ((d * 24 + h) * 60 + m) * 60 + sec  # an int: no overflow before the bound
    if not 0 < seconds <= 7 * 24 * 3600:
        raise WindowError("duration", "must be more than 0 and at most 7 days")
    return timedelta(seconds=seconds)


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 64 else text[:60] + "...'"


def window_state(window: Window, now: datetime, zone: tzinfo) -> WindowState:
    """Is the window open at ``now`` (an aware datetime), and when does it close or open?"""
    local = now.astimezone(zone)
    next_open: datetime | None = None
    for offset in range(-8, 9):
        day = local.date() + timedelta(days=offset)
        if day.weekday() not in window.days:
            continue
        start = datetime.combine(day, window.start, tzinfo=zone)
        end = (start.astimezone(UTC) + window.duration).astimezone(zone)
        if start <= now < end:
            return WindowState(True, None, end)
        if start > now and (next_open is None or start < next_open):
            next_open = start
    return WindowState(False, next_open, None)


def pool_window(pool: Mapping[str, Any], now: datetime) -> tuple[WindowState | None, str]:
    """The pool's maintenance window now (None: the pool has none), and why it cannot be
    used: an annotation that does not parse, or an unknown time zone, holds the updates
    that drain or reboot (the state is a closed window with no opening)."""
    meta = pool.get("metadata")
    annotations = (meta.get("annotations") if isinstance(meta, Mapping) else None) or {}
    text = annotations.get(WINDOW_ANNOTATION)
    if text is None:
        return None, ""
    try:
        window = parse_window(str(text))
        zone = ZoneInfo(window.time_zone)
    except WindowError as e:
        return WindowState(False, None, None), f"{e}; updates that drain or reboot are held"
    except (ZoneInfoNotFoundError, ValueError):
        message = (
            f"annotation {WINDOW_ANNOTATION}: timeZone: unknown time zone; "
            "updates that drain or reboot are held"
        )
        return WindowState(False, None, None), message
    return window_state(window, now, zone), ""
