"""The public API is exactly __all__, sorted; errors fit the hierarchy."""

from __future__ import annotations

import inspect
from typing import Literal, get_origin

import pytest

import dagster_ds.cache
import dagster_ds.errors
from dagster_ds.errors import (
    CacheError,
    CacheFileNotFoundError,
    CacheFormatError,
    CacheLockTimeoutError,
    CacheMetadataError,
    CacheWriterError,
    DagsterDsError,
    InvalidFingerprintError,
)


def test_all_is_sorted_and_complete() -> None:
    names = dagster_ds.cache.__all__
    assert names == sorted(names)
    public = {name for name in vars(dagster_ds.cache) if not name.startswith("_")}
    assert public == set(names) | set(dagster_ds.cache.__internal__)  # internal: not public


def test_public_names_are_documented_with_an_example() -> None:
    for name in dagster_ds.cache.__all__:
        value = getattr(dagster_ds.cache, name)
        if get_origin(value) is Literal:  # ChecksumPolicy, LockMode: documented where defined
            continue
        if isinstance(value, type) and issubclass(value, Warning):  # one-line docstrings
            assert value.__doc__, name
            continue
        assert "Example" in (inspect.getdoc(value) or ""), name
    for name, method in vars(dagster_ds.cache.CacheStore).items():
        if not name.startswith("_") and inspect.isfunction(method):
            assert "Example" in (inspect.getdoc(method) or ""), name


def test_errors_fit_the_hierarchy() -> None:
    expected = {
        CacheFileNotFoundError: KeyError,
        CacheFormatError: ValueError,
        CacheLockTimeoutError: TimeoutError,
        CacheMetadataError: TypeError,
        CacheWriterError: ValueError,
    }
    for error, builtin in expected.items():
        assert issubclass(error, CacheError)
        assert issubclass(error, builtin)
        assert error.__name__ in (dagster_ds.errors.__doc__ or "")  # listed in the tree
    assert issubclass(CacheError, DagsterDsError)
    assert issubclass(InvalidFingerprintError, DagsterDsError)
    assert issubclass(InvalidFingerprintError, ValueError)
    assert dagster_ds.errors.__all__ == sorted(dagster_ds.errors.__all__)


def test_missing_file_message_is_readable() -> None:
    store = dagster_ds.cache.CacheStore("memory://missing-file")
    entry = store.get_or_create("5" * 32, lambda w: w.write_bytes("a", b""))
    with pytest.raises(CacheFileNotFoundError) as caught:
        entry.open("b")
    assert str(caught.value) == f"Cache entry {'5' * 32!r} has no file 'b'; its files are ['a']."
