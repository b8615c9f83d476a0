"""Typed access to a decoded JSON/YAML tree, with errors that name the field."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from mcd.model.errors import ConfigParseError

JSONMap = Mapping[str, Any]


def type_name(v: object) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, int):
        return "an integer"
    if isinstance(v, float):
        return "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, list):
        return "a list"
    if isinstance(v, Mapping):
        return "an object"
    return type(v).__name__


def join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def as_map(v: object, path: str) -> JSONMap:
    if not isinstance(v, Mapping):
        raise ConfigParseError(f"expected an object, got {type_name(v)}", path)
    for k in v:
        if not isinstance(k, str):
            raise ConfigParseError(f"object keys must be strings, got {type_name(k)}", path)
    return v


def opt_map(obj: JSONMap, key: str, path: str) -> JSONMap:
    v = obj.get(key)
    return {} if v is None else as_map(v, join(path, key))


def opt_list(obj: JSONMap, key: str, path: str) -> list[Any]:
    v = obj.get(key)
    if v is None:
        return []
    if not isinstance(v, list):
        raise ConfigParseError(f"expected a list, got {type_name(v)}", join(path, key))
    return v


def opt_str(obj: JSONMap, key: str, path: str) -> str | None:
    v = obj.get(key)
    if v is None or isinstance(v, str):
        return v
    raise ConfigParseError(f"expected a string, got {type_name(v)}", join(path, key))


def opt_bool(obj: JSONMap, key: str, path: str) -> bool | None:
    v = obj.get(key)
    if v is None or isinstance(v, bool):
        return v
    raise ConfigParseError(f"expected a boolean, got {type_name(v)}", join(path, key))


def opt_int(obj: JSONMap, key: str, path: str) -> int | None:
    v = obj.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        raise ConfigParseError(f"expected an integer, got {type_name(v)}", join(path, key))
    return v


def str_list(obj: JSONMap, key: str, path: str) -> tuple[str, ...]:
    out = []
    for i, item in enumerate(opt_list(obj, key, path)):
        if not isinstance(item, str):
            raise ConfigParseError(
                f"expected a string, got {type_name(item)}", join(join(path, key), i)
            )
        out.append(item)
    return tuple(out)


def canonical(v: object) -> str:
    """Canonical JSON text, for equality of sections kept verbatim."""
    return json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def is_empty(v: object) -> bool:
    """Go's zero value test for decoded JSON: null, "", 0, false, [] and {}."""
    return v is None or v is False or v in (0, "", [], {})
