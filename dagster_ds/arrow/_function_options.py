"""Options of `map`/`filter` that change how the user's function is called or stored.

``with_rank`` and ``on_mixed_types`` wrap the function in a picklable, hashable
callable (`functools.partial` of a module function), so the fingerprint still
names the user's function.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

from dagster_ds.errors import InvalidArgumentError
from dagster_ds.formatting import MixedValue, mixed_as_json

_MIXED_TYPES = (None, "use_json")


def check_mixed_types(on_mixed_types: str | None) -> None:
    """Refuse an ``on_mixed_types`` value the anchor does not know."""
    if on_mixed_types not in _MIXED_TYPES:
        raise InvalidArgumentError(
            f"on_mixed_types={on_mixed_types!r}: use None (mixed types are an error) or "
            "'use_json' (store such a column as Json)."
        )


def with_no_rank(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` called with a last argument, the rank: None (as the anchor in one process)."""
    return functools.partial(_call_with_rank, function)


def _call_with_rank(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    return function(*args, None, **kwargs)


def with_json_for_mixed_types(function: Callable[..., Any], batched: bool) -> Callable[..., Any]:
    """``function`` whose output columns of mixed types are given as JSON text."""
    return functools.partial(_call_mixed_as_json, function, batched)


def _call_mixed_as_json(
    function: Callable[..., Any], batched: bool, *args: Any, **kwargs: Any
) -> Any:
    result = function(*args, **kwargs)
    if not isinstance(result, Mapping):
        return result
    output: Mapping[str, Any] = result
    if not batched:
        return {name: MixedValue(value) for name, value in output.items()}
    return {
        name: mixed_as_json(values) if isinstance(values, list) else values
        for name, values in output.items()
    }
