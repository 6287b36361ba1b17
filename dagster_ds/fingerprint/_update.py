"""Fingerprints of transforms: update_fingerprint and random fingerprints."""

from __future__ import annotations

import secrets
import threading
import warnings
from collections.abc import Mapping
from typing import Any

from dagster_ds.errors import UnhashableError, UnhashableTransformWarning
from dagster_ds.fingerprint._hasher import _HashContext  # pyright: ignore[reportPrivateUsage]
from dagster_ds.fingerprint._tree import HashNode, combine, leaf

# Arguments that change how a transform runs, never what it produces.
EXECUTION_ONLY_ARGUMENTS = frozenset(
    {
        "num_proc",
        "desc",
        "load_from_cache_file",
        "cache_file_name",
        "writer_batch_size",
        "keep_in_memory",
        "new_fingerprint",
    }
)

_warned: set[tuple[str, str]] = set()
_warned_lock = threading.Lock()


def describe_transform(fingerprint: str, transform: str, args: Mapping[str, Any]) -> HashNode:
    """The hash tree of a transform applied to a dataset.

    Its components are the parent fingerprint, the transform's name and each
    argument that can change the result (`EXECUTION_ONLY_ARGUMENTS` are left
    out). Its digest is what `update_fingerprint` returns.

    Raises:
        UnhashableError: An argument cannot be hashed; the error names it.
    """
    context = _HashContext()
    components = {
        "parent fingerprint": HashNode("fingerprint", "parent fingerprint", fingerprint),
        "transform": leaf("transform", "transform", transform),
    }
    for name in sorted(args):
        if name not in EXECUTION_ONLY_ARGUMENTS:
            key = f"argument '{name}'"
            components[key] = context.describe(args[name], label=key)
    return HashNode("transform", transform, combine("transform", components), components)


def update_fingerprint(fingerprint: str, transform: str, args: Mapping[str, Any]) -> str:
    """The fingerprint of ``transform(parent, **args)``, given the parent's fingerprint.

    If an argument cannot be hashed, a `UnhashableTransformWarning` names it and
    says how to fix it (once per transform and cause), and a random fingerprint
    is returned: the result is then never reused from a cache.

    Args:
        fingerprint: The parent dataset's fingerprint.
        transform: The transform's name, for example ``"map"``.
        args: The transform's arguments by name. Arguments that only tune
            execution (``num_proc``, ``desc``, ...) are ignored.

    Returns:
        32 hexadecimal characters.

    Example:
        >>> parent = "0" * 32
        >>> update_fingerprint(parent, "map", {"batched": True}) == update_fingerprint(
        ...     parent, "map", {"batched": True, "num_proc": 4}
        ... )
        True
    """
    return fingerprint_transform(fingerprint, transform, args)[0]


def fingerprint_transform(
    fingerprint: str, transform: str, args: Mapping[str, Any]
) -> tuple[str, HashNode | None]:
    """`update_fingerprint`, also returning the hash tree (None if it was random).

    The tree can be stored next to a cached result so that `explain` can later
    say why two results differ, in another process.

    Example:
        >>> fp, tree = fingerprint_transform("0" * 32, "map", {"batched": True})
        >>> tree.components["argument 'batched'"].label
        "argument 'batched'"
    """
    try:
        tree = describe_transform(fingerprint, transform, args)
    except UnhashableError as error:
        _warn_once(transform, error)
        return generate_random_fingerprint(), None
    return tree.digest, tree


def rebase_transform(tree: HashNode, parent: str, **values: str | int) -> str:
    """The fingerprint of the transform described by ``tree``, applied to another parent.

    The same digest as `update_fingerprint` gives for ``parent`` and the
    transform's arguments, without hashing the arguments again: a transform
    applied shard by shard is hashed once, then rebased on each shard's
    fingerprint. ``values`` add components (a shard's row offset, say).

    Example:
        >>> fp, tree = fingerprint_transform("0" * 32, "map", {"batched": True})
        >>> rebased = rebase_transform(tree, "1" * 32)
        >>> rebased == update_fingerprint("1" * 32, "map", {"batched": True})
        True
    """
    components = {
        **tree.components,
        "parent fingerprint": HashNode("fingerprint", "parent fingerprint", parent),
    }
    for name, value in sorted(values.items()):
        components[f"shard {name}"] = leaf("value", f"shard {name}", str(value))
    return combine("transform", components)


def replace_arguments(tree: HashNode, args: Mapping[str, Any]) -> HashNode:
    """The hash tree of the transform ``tree`` describes, with some arguments replaced.

    The same tree as `describe_transform` gives for all the arguments, but only
    the replaced ones are hashed: a load applied file by file hashes its options
    once, then only each file's source.

    Raises:
        UnhashableError: A replacement cannot be hashed; the error names it.

    Example:
        >>> tree = describe_transform("0" * 32, "load", {"source": "a", "format": "json"})
        >>> other = replace_arguments(tree, {"source": "b"})
        >>> other == describe_transform("0" * 32, "load", {"source": "b", "format": "json"})
        True
    """
    context = _HashContext()
    components = dict(tree.components)
    for name in sorted(args):
        if name not in EXECUTION_ONLY_ARGUMENTS:
            key = f"argument '{name}'"
            components[key] = context.describe(args[name], label=key)
    return HashNode(tree.kind, tree.label, combine("transform", components), components)


def generate_random_fingerprint() -> str:
    """A fresh random fingerprint (128 bits), which no cache entry will ever match.

    Example:
        >>> len(generate_random_fingerprint())
        32
    """
    return secrets.token_hex(16)


def _warn_once(transform: str, error: UnhashableError) -> None:
    key = (transform, error.explanation)
    with _warned_lock:
        if key in _warned:
            return
        _warned.add(key)
    warnings.warn(
        f"Transform {transform!r} cannot be hashed: {error.explanation}. Its result gets a "
        "random fingerprint, so it is recomputed every time and never reused from the cache. "
        "To fix this, make that object picklable (or hold it in a global created inside "
        "the function), or pass new_fingerprint=... to the transform.",
        UnhashableTransformWarning,
        stacklevel=3,
    )
