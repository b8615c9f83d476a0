"""Scalars as yaml.v2 v2.4.0 sees Go's JSON of a MachineConfig spec (for :mod:`goyaml`).

What ghodss/yaml's ``JSONToYAML`` reads back from Go's JSON text (a raw NEL folds, some
characters are refused), which style yaml.v2's encoder asks for (``encode.go``: a string
that would read back as something else is quoted, ``resolve.go``), how it writes numbers,
and its key order (``sorter.go``: numbers inside keys compare by value).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

PLAIN, DOUBLE, LITERAL = "plain", "double", "literal"
_BOOL_NULL_FLOAT = frozenset(
    (
        "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON",
        "n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF",
        "", "~", "null", "Null", "NULL", ".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF",
        "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF",
    )
)  # fmt: skip
_YAML_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_BASE60 = re.compile(r"[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?")
_TIMESTAMP = re.compile(
    r"([0-9]{4})-([0-9]{1,2})-([0-9]{1,2})"
    r"(?:(?:[Tt]([0-9]{1,2}):([0-9]{1,2}):([0-9]{1,2})(?:[.,][0-9]+)?(Z|[-+][0-9]{2}:[0-9]{2}))"
    r"|(?: ([0-9]{1,2}):([0-9]{1,2}):([0-9]{1,2})(?:[.,][0-9]+)?))?"
)


# --- what yaml.v2 reads back from Go's JSON text (scannerc.go, readerc.go) ---

# Characters Go's JSON encoder leaves raw that yaml.v2's reader refuses.
_UNREADABLE = re.compile("[\x7f\x80-\x84\x86-\x9f\ufffe\uffff]")


def read_back(value: Any) -> Any:
    """``value`` as yaml.v2 reads it from ``json.Marshal`` text (ghodss's ``JSONToYAML``).

    Go's JSON leaves NEL (U+0085) raw in strings, and YAML reads it as a line break inside a
    double-quoted scalar: folded to a space (with the spaces around it), or kept as line
    feeds where several follow each other. Raises ``ValueError`` where yaml.v2 refuses the
    text, so upstream cannot name the config either.
    """
    if isinstance(value, str):
        return _fold(value)
    if isinstance(value, Mapping):
        return {_key(str(k)): read_back(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [read_back(v) for v in value]
    return value


@functools.lru_cache(maxsize=4096)
def _key(text: str) -> str:
    """A key must stay a simple key: on one line, its JSON text at most 1024 characters.
    (Keys repeat, every file has ``path``: cached; a refused key raises again, uncached.)"""
    if "\x85" in text or 2 + sum(len(_go_json_char(c)) for c in text) > 1024:
        raise ValueError("yaml: did not find expected ',' or '}'")
    return _fold(text)


def _go_json_char(c: str) -> str:
    """How Go's ``json.Marshal`` writes ``c`` inside a string (HTML-safe, as it does)."""
    if c in '"\\':
        return "\\" + c
    if c in "\n\r\t":
        return "\\" + {"\n": "n", "\r": "r", "\t": "t"}[c]
    if ord(c) < 0x20 or c in "<>&\u2028\u2029":
        return f"\\u{ord(c):04x}"
    return c


def _fold(text: str) -> str:
    if _UNREADABLE.search(text):
        raise ValueError("yaml: control characters are not allowed")
    if "\x85" not in text:
        return text
    out: list[str] = []
    i, n = 0, len(text)
    while True:
        j = i
        while j < n and text[j] not in " \x85":
            j += 1
        out.append(text[i:j])
        if j == n:
            return "".join(out)
        i, spaces, breaks = j, "", ""
        while i < n and text[i] in " \x85":
            if text[i] == " ":
                spaces += "" if breaks else " "
            else:
                breaks += "\n"
            i += 1
        if not breaks:
            out.append(spaces)
            continue
        out.append(" " if len(breaks) == 1 else breaks[1:])
        if (
            text[i - 1] == "\x85"
            and text[i : i + 3] in ("---", "...")
            and text[i + 3 : i + 4] in (" ", "\x85")
        ):
            raise ValueError("yaml: found unexpected document indicator")


# --- what the encoder asks for (encode.go, resolve.go, sorter.go) ---


def scalar_text(value: Any) -> tuple[str, str]:
    """The text and requested style of a scalar, as yaml.v2's encoder produces them."""
    if value is None:
        return "null", PLAIN
    if isinstance(value, bool):
        return ("true" if value else "false"), PLAIN
    if isinstance(value, int):
        if -(2**63) <= value < 2**64:
            return str(value), PLAIN
        as_float = float(value) if abs(value) < 2**1024 else math.inf
        return (str(value) if math.isinf(as_float) else format_float(as_float)), PLAIN
    if isinstance(value, float):
        return format_float(value), PLAIN
    if isinstance(value, str):
        if "\n" in value:
            return value, LITERAL
        return value, (PLAIN if resolves_to_string(value) else DOUBLE)
    raise TypeError(f"not JSON data: {type(value).__name__}")


def format_float(value: float) -> str:
    """Go's ``strconv.FormatFloat(v, 'g', -1, 64)`` with yaml.v2's names for infinities."""
    if math.isnan(value):
        return ".nan"
    if math.isinf(value):
        return ".inf" if value > 0 else "-.inf"
    sign = "-" if math.copysign(1.0, value) < 0 else ""
    if value == 0:
        return sign + "0"
    mantissa, _, exponent = repr(abs(value)).partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = (whole + frac).lstrip("0")
    point = len(whole.lstrip("0")) if whole.lstrip("0") else -(len(frac) - len(frac.lstrip("0")))
    point += int(exponent or 0)
    digits = digits.rstrip("0") or "0"
    exp = point - 1
    if exp < -4 or exp >= 6:
        text = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{text}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return sign + digits + "0" * (point - len(digits))
    return f"{sign}{digits[:point]}.{digits[point:]}"


def resolves_to_string(text: str) -> bool:
    """True if ``text`` written plain reads back as the same string (``canUsePlain``)."""
    if _BASE60.fullmatch(text) and text[:1] in "+-0123456789" and ":" in text:
        return False
    if text in _BOOL_NULL_FLOAT:
        return False
    hint = text[0]
    if hint == ".":
        return _go_parse_float(text) is None
    if hint not in "+-0123456789":
        return True
    if _is_timestamp(text):
        return False
    plain = text.replace("_", "")
    if _go_parse_int(plain, 0, signed=True) is not None:
        return False
    if _go_parse_int(plain, 0, signed=False) is not None:
        return False
    if _YAML_FLOAT.fullmatch(plain) and _go_parse_float(plain) is not None:
        return False
    if plain.startswith("0b"):
        rest = plain[2:]
        return _go_parse_int(rest, 2, signed=True) is None and (
            _go_parse_int(rest, 2, signed=False) is None
        )
    if plain.startswith("-0b"):
        return _go_parse_int("-" + plain[3:], 2, signed=True) is None
    return True


def _go_parse_int(text: str, base: int, *, signed: bool) -> int | None:
    """``strconv.ParseInt``/``ParseUint`` (64 bits) without underscores; None on error."""
    negative = False
    if signed and text[:1] in ("+", "-"):
        negative, text = text[0] == "-", text[1:]
    if base == 0:
        base = 10
        low = text[:2].lower()
        if low in ("0x", "0o", "0b"):
            base, text = {"0x": 16, "0o": 8, "0b": 2}[low], text[2:]
        elif text[:1] == "0" and len(text) > 1:
            base, text = 8, text[1:]
    if not text or any(c not in "0123456789abcdefABCDEF"[: base + max(0, base - 10)] for c in text):
        return None
    number = int(text, base)
    if signed:
        limit = 2**63 if negative else 2**63 - 1
        return None if number > limit else (-number if negative else number)
    return None if number >= 2**64 else number


_GO_FLOAT = re.compile(r"[-+]?(?:[0-9_]*\.?[0-9_]*)(?:[eE][-+]?[0-9_]+)?")


def _go_parse_float(text: str) -> float | None:
    """``strconv.ParseFloat(text, 64)`` for decimal text; None on a syntax or range error."""
    if not _GO_FLOAT.fullmatch(text) or not any(
        c.isdigit() for c in text.split("e", maxsplit=1)[0].split("E", maxsplit=1)[0]
    ):
        return None
    if "_" in text and not _underscore_ok(text):
        return None
    try:
        number = float(text.replace("_", ""))
    except ValueError:
        return None
    return None if math.isinf(number) else number


def _underscore_ok(text: str) -> bool:
    """``strconv.underscoreOK``: underscores only between digits."""
    saw = "^"
    if text[:1] in ("+", "-"):
        text = text[1:]
    for c in text:
        if c.isdigit():
            saw = "0"
        elif c == "_":
            if saw != "0":
                return False
            saw = "_"
        else:
            if saw == "_":
                return False
            saw = "!"
    return saw != "_"


def _is_timestamp(text: str) -> bool:
    """yaml.v2's ``parseTimestamp`` (Go's ``time.Parse`` with its four layouts)."""
    match = _TIMESTAMP.fullmatch(text)
    if not match:
        return False
    year, month, day = (int(match.group(i)) for i in (1, 2, 3))
    if not 1 <= month <= 12:
        return False
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    days = [31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
    if not 1 <= day <= days:
        return False
    clock = match.group(4, 5, 6) if match.group(4) is not None else match.group(8, 9, 10)
    if clock[0] is None:
        return True
    hour, minute, second = (int(c) for c in clock)
    zone = match.group(7)
    if zone and zone != "Z" and (int(zone[1:3]) > 24 or int(zone[4:6]) > 60):
        return False
    return hour < 24 and minute < 60 and second < 60


def key_less(a: str, b: str) -> bool:
    """yaml.v2's ``keyList.Less`` for two string keys: numbers inside compare by value."""
    for i in range(min(len(a), len(b))):
        if a[i] == b[i]:
            continue
        al, bl = a[i].isalpha(), b[i].isalpha()
        if al and bl:
            return a[i] < b[i]
        if al or bl:
            return bl
        an = bn = 0
        if a[i] == "0" or b[i] == "0":
            j = i - 1
            while j >= 0 and a[j].isdecimal():
                if a[j] != "0":
                    an = bn = 1
                    break
                j -= 1
        ai, an = _digits(a, i, an)
        bi, bn = _digits(b, i, bn)
        if an != bn:
            return an < bn
        if ai != bi:
            return ai < bi
        return a[i] < b[i]
    return len(a) < len(b)


def _digits(text: str, start: int, number: int) -> tuple[int, int]:
    i = start
    while i < len(text) and text[i].isdecimal():
        number = (number * 10 + ord(text[i]) - 48 + 2**63) % 2**64 - 2**63  # int64 wraps
        i += 1
    return i, number


def _compare(a: str, b: str) -> int:
    return -1 if key_less(a, b) else (1 if key_less(b, a) else 0)


def sorted_keys(keys: Sequence[str]) -> list[str]:
    """Go's ``sort.Sort`` over the keys: insertion sort up to 12, as pdqsort does."""
    if len(keys) <= 12:  # the same few keys in every file, unit, user: sorted once
        return list(_sorted_few(tuple(keys)))
    return sorted(keys, key=functools.cmp_to_key(_compare))


@functools.lru_cache(maxsize=1024)
def _sorted_few(keys: tuple[str, ...]) -> tuple[str, ...]:
    out = list(keys)
    for i in range(1, len(out)):
        j = i
        while j > 0 and key_less(out[j], out[j - 1]):
            out[j], out[j - 1] = out[j - 1], out[j]
            j -= 1
    return tuple(out)
