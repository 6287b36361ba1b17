"""Code versions and data versions of dataset assets.

A dataset asset's **code version** is its transform hash: the hash of its
function by value (code, closure, the globals and helpers it uses, recursively
through the user's own modules) and of its config class. Its **data version**
is the fingerprint of the dataset it produces, known *before* the function
runs::

    fingerprint = update_fingerprint(ROOT, "dataset_asset",
                                     {transform hash, {parameter: parent fingerprint}, config})

so an asset whose parents and code did not change has the fingerprint of the
dataset already stored, and its function need not run.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any

from dagster_ds.errors import UnhashableError, UnhashableTransformWarning
from dagster_ds.fingerprint import (
    Hasher,
    HashNode,
    fingerprint_transform,
    generate_random_fingerprint,
)

__all__ = ["asset_fingerprint", "transform_hash"]

ROOT_FINGERPRINT = "0" * 32
TRANSFORM_NAME = "dataset_asset"


def transform_hash(
    function: Callable[..., Any], config_type: type | None = None, version_salt: str | None = None
) -> str | None:
    """The transform hash of an asset function: its code version.

    ``version_salt`` (`dataset_asset`'s argument) is hashed with it: change the
    salt to invalidate what was stored. Returns None, with an
    `UnhashableTransformWarning` naming the offending object, when the function
    cannot be hashed; such an asset recomputes on every run.

    Example:
        >>> def double(numbers):
        ...     return numbers.map(lambda row: {"n": row["n"] * 2})
        >>> len(transform_hash(double))
        32
    """
    try:
        salt = {"salt": version_salt} if version_salt is not None else {}
        return Hasher.hash({"function": function, "config": config_shape(config_type), **salt})
    except UnhashableError as error:
        warnings.warn(
            f"The dataset asset function {_name(function)} cannot be hashed: {error.explanation}."
            " It gets no code version and a random fingerprint on every run, so it is never"
            " skipped. Make that object picklable, or create it inside the function.",
            UnhashableTransformWarning,
            stacklevel=3,
        )
        return None


def asset_fingerprint(
    code_version: str | None,
    parents: Mapping[str, str],
    config: Mapping[str, Any] | None = None,
) -> str:
    """The fingerprint a dataset asset produces from these parents, before running it.

    Args:
        code_version: The asset's transform hash (None: unhashable, so random).
        parents: Each upstream parameter's dataset fingerprint.
        config: The run config values the function receives, if any.

    Example:
        >>> a = asset_fingerprint("1" * 32, {"corpus": "2" * 32})
        >>> a == asset_fingerprint("1" * 32, {"corpus": "2" * 32})
        True
        >>> a == asset_fingerprint("1" * 32, {"corpus": "3" * 32})
        False
    """
    return asset_recipe(code_version, parents, config)[0]


def asset_recipe(
    code_version: str | None,
    parents: Mapping[str, str],
    config: Mapping[str, Any] | None = None,
    hidden: Mapping[str, Mapping[str, str]] | None = None,
    *,
    partition_key: str | None = None,
) -> tuple[str, HashNode | None]:
    """`asset_fingerprint`, with its hash tree (None: random).

    ``hidden``: digests of what the function reads besides its arguments, by
    kind (``resources``: the configuration of the resources it requires;
    ``inputs``: its declared ``fingerprint_inputs``); empty kinds add nothing.
    ``partition_key``: the partition of a partitioned asset, part of its recipe
    (the function may read it from ``context.partition_key``).
    """
    if code_version is None:
        return generate_random_fingerprint(), None
    args: dict[str, Any] = {
        "transform": code_version,
        "parents": dict(parents),
        "config": dict(config or {}),
    }
    args.update({kind: dict(digests) for kind, digests in (hidden or {}).items() if digests})
    if partition_key is not None:
        args["partition"] = partition_key
    return fingerprint_transform(ROOT_FINGERPRINT, TRANSFORM_NAME, args)


def config_shape(config_type: type | None) -> Any:
    """What a config class contributes to the code version: field names, types, defaults."""
    if config_type is None:
        return None
    fields: Mapping[str, Any] = getattr(config_type, "model_fields", {})
    return {
        "class": config_type.__qualname__,
        "fields": {
            name: [repr(field.annotation), repr(field.default)] for name, field in fields.items()
        },
    }


def _name(function: Callable[..., Any]) -> str:
    return repr(getattr(function, "__qualname__", function))
