"""JSON helpers: the cache reads only JSON (never pickles), and checks its shape."""

from __future__ import annotations

import json
from typing import cast

# What json.loads returns, spelled out so strict type checking can follow it.
JSONValue = None | bool | int | float | str | list["JSONValue"] | dict[str, "JSONValue"]


def parse_object(data: bytes | str) -> dict[str, JSONValue] | None:
    """The JSON object in ``data``, or None if ``data`` is not one (truncated, garbage...)."""
    try:
        value = cast(JSONValue, json.loads(data))
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def as_object(value: object) -> dict[str, JSONValue] | None:
    """``value`` as a JSON object with string keys, or None."""
    if isinstance(value, dict) and all(
        isinstance(key, str) for key in cast(dict[object, object], value)
    ):
        return cast(dict[str, JSONValue], value)
    return None


def dumps(value: object) -> bytes:
    """Canonical JSON bytes (sorted keys, compact, no NaN); TypeError/ValueError if not JSON data.

    Compact, so that the C encoder writes it: manifests carry hash trees, and the
    indenting encoder is pure Python, ten times slower on them.
    """
    return json.dumps(value, sort_keys=True, allow_nan=False, separators=(",", ":")).encode()


def copy_json(value: JSONValue) -> JSONValue:
    """A deep copy of JSON data (several times faster than `copy.deepcopy` on it)."""
    if isinstance(value, dict):
        return {key: copy_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [copy_json(item) for item in value]
    return value
