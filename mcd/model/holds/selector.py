"""Kubernetes label selector strings (apimachinery ``labels.Parse``, as kured's
``--blocking-pod-selector`` takes them) turned into a ``metav1.LabelSelector`` object, so one
matcher (:func:`mcd.model.pool.pools.selector_matches`) judges both spellings.

``app=db``, ``app==db``, ``app!=db``, ``tier in (a,b)``, ``tier notin (a,b)``, ``gpu``,
``!legacy``, joined by commas. Keys and values follow the label syntax (a DNS subdomain prefix
and a 63-character name; values of at most 63 characters, possibly empty)."""

from __future__ import annotations

import re
from typing import Any

_NAME = r"[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_PREFIX = r"[a-z0-9](?:[-a-z0-9.]{0,251}[a-z0-9])?"
_KEY = re.compile(rf"^(?:{_PREFIX}/)?{_NAME}$")
_VALUE = re.compile(rf"^(?:{_NAME})?$")
_SET = re.compile(r"^\s*([^\s!=(),]+)\s+(in|notin)\s*\(([^()]*)\)\s*$")
_EQUALS = re.compile(r"^\s*([^\s!=(),]+)\s*(==|=|!=)\s*([^\s!=(),]*)\s*$")
_EXISTS = re.compile(r"^\s*(!?)\s*([^\s!=(),]+)\s*$")
MAX_SELECTOR = 1024


class SelectorSyntaxError(ValueError):
    """A label selector string that cannot be parsed; the text says where."""


def _split(text: str) -> list[str]:
    """The requirements: commas outside parentheses."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
            if depth > 1:
                raise SelectorSyntaxError("nested parentheses")
        elif ch == ")":
            depth -= 1
            if depth < 0:
                raise SelectorSyntaxError("unbalanced parentheses")
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if depth:
        raise SelectorSyntaxError("unbalanced parentheses")
    parts.append(text[start:])
    return parts


def _key(key: str) -> str:
    if not _KEY.match(key) or len(key.rpartition("/")[2]) > 63:
        raise SelectorSyntaxError(f"invalid label key {key[:80]!r}")
    return key


def _value(value: str) -> str:
    if not _VALUE.match(value):
        raise SelectorSyntaxError(f"invalid label value {value[:80]!r}")
    return value


def parse_selector(text: str) -> dict[str, Any]:
    """The selector string as a LabelSelector object (``matchLabels`` for ``=``/``==``,
    ``matchExpressions`` for the rest). An empty string is refused: it would select every
    pod (kured passes an empty selector through, which blocks every reboot)."""
    if len(text) > MAX_SELECTOR:
        raise SelectorSyntaxError(f"longer than {MAX_SELECTOR} characters")
    if not text.strip():
        raise SelectorSyntaxError("empty selector (it would match every pod)")
    labels: dict[str, str] = {}
    expressions: list[dict[str, Any]] = []
    for part in _split(text):
        if m := _SET.match(part):
            values = [v.strip() for v in m.group(3).split(",")]
            if values == [""]:
                raise SelectorSyntaxError(f"{m.group(2)} needs at least one value")
            op = "In" if m.group(2) == "in" else "NotIn"
            expressions.append({"key": _key(m.group(1)), "operator": op,
                                "values": sorted({_value(v) for v in values})})  # fmt: skip
        elif m := _EQUALS.match(part):
            key, value = _key(m.group(1)), _value(m.group(3))
            if m.group(2) == "!=":
                expressions.append({"key": key, "operator": "NotIn", "values": [value]})
            elif labels.get(key, value) != value:  # a=1,a=2 matches nothing
                expressions.append({"key": key, "operator": "In", "values": [value]})
            else:
                labels[key] = value
        elif m := _EXISTS.match(part):
            op = "DoesNotExist" if m.group(1) else "Exists"
            expressions.append({"key": _key(m.group(2)), "operator": op})
        else:
            shown = part.strip()[:80] or "(nothing)"
            raise SelectorSyntaxError(f"cannot parse requirement {shown!r}")
    out: dict[str, Any] = {}
    if labels:
        out["matchLabels"] = labels
    if expressions:
        out["matchExpressions"] = expressions
    return out
