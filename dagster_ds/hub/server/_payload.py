"""Reading request payloads: JSON with bounded nesting, and typed fields with clear 400s.

Every handler reads its payload through these helpers, so a value of the wrong
type (a string where a size is expected, a list where an object is) is a
`HubBadRequestError` naming the field, never an exception inside the handler.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from dagster_ds.formats import nesting_depth
from dagster_ds.hub.server._errors import HubBadRequestError

MAX_JSON_DEPTH = 32


def parse_json(body: bytes | str, what: str) -> Any:
    """``body`` parsed as JSON, nested at most `MAX_JSON_DEPTH` levels.

    The depth is measured before parsing, so the parser never recurses deep: a body
    nested thousands of levels is refused without coming near the recursion limit (a
    garbage collection there would run finalizers with no stack left).
    """
    try:
        text = body if isinstance(body, str) else body.decode(json.detect_encoding(body))
    except ValueError as e:
        raise _not_json(body, what) from e
    if nesting_depth(text, stop_above=MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
        raise HubBadRequestError(
            f"{what} is nested too deeply: at most {MAX_JSON_DEPTH} levels are accepted."
        )
    try:
        return json.loads(text)
    except ValueError as e:
        raise _not_json(body, what) from e


def _not_json(body: bytes | str, what: str) -> HubBadRequestError:
    return HubBadRequestError(
        f"{what} is not JSON: {body[:120]!r}. Send a JSON document as huggingface_hub does."
    )


def json_object(body: bytes, what: str) -> dict[str, Any]:
    """The body as a JSON object; an empty body is ``{}``."""
    if not body.strip():
        return {}
    data = parse_json(body, what)
    return as_object(data, what)


def as_object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise HubBadRequestError(f"{what} must be a JSON object, got {type(value).__name__}.")
    return value


def text(data: Mapping[str, Any], key: str, what: str, *, default: str | None = None) -> str | None:
    """A string field (``default`` when missing or null)."""
    value = data.get(key)
    if value is None:
        return default
    if not isinstance(value, str):
        raise HubBadRequestError(
            f"{what}: {key!r} must be a string, got {type(value).__name__} {value!r:.80}."
        )
    return value


def required_text(data: Mapping[str, Any], key: str, what: str) -> str:
    value = text(data, key, what)
    if not value:
        raise HubBadRequestError(f"{what}: {key!r} is missing or empty.")
    return value


def integer(
    data: Mapping[str, Any], key: str, what: str, *, default: int | None = None
) -> int | None:
    """A non-negative integer field (``default`` when missing or null)."""
    value = data.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise HubBadRequestError(
            f"{what}: {key!r} must be a non-negative integer, got {value!r:.80}."
        )
    return value


def boolean(data: Mapping[str, Any], key: str, what: str, *, default: bool = False) -> bool:
    value = data.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise HubBadRequestError(f"{what}: {key!r} must be true or false, got {value!r:.80}.")
    return value


def array(data: Mapping[str, Any], key: str, what: str) -> list[Any]:
    """A list field (``[]`` when missing)."""
    value = data.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise HubBadRequestError(f"{what}: {key!r} must be a list, got {type(value).__name__}.")
    return value
