"""update_fingerprint: what counts, what is ignored, and unhashable transforms."""

from __future__ import annotations

import re
import sqlite3
import warnings

import pytest

from dagster_ds import UnhashableTransformWarning
from dagster_ds.fingerprint import (
    EXECUTION_ONLY_ARGUMENTS,
    generate_random_fingerprint,
    update_fingerprint,
)

PARENT = "5" * 32


def _double(example: dict[str, int]) -> dict[str, int]:
    return {"x": example["x"] * 2}


def test_fingerprint_depends_on_parent_transform_and_arguments() -> None:
    base = update_fingerprint(PARENT, "map", {"function": _double, "batched": False})
    assert re.fullmatch(r"[0-9a-f]{32}", base)
    assert base == update_fingerprint(PARENT, "map", {"batched": False, "function": _double})
    assert base != update_fingerprint("6" * 32, "map", {"function": _double, "batched": False})
    assert base != update_fingerprint(PARENT, "filter", {"function": _double, "batched": False})
    assert base != update_fingerprint(PARENT, "map", {"function": _double, "batched": True})
    assert base != PARENT


@pytest.mark.parametrize("argument", sorted(EXECUTION_ONLY_ARGUMENTS))
def test_execution_only_arguments_are_ignored(argument: str) -> None:
    base = update_fingerprint(PARENT, "map", {"function": _double})
    assert update_fingerprint(PARENT, "map", {"function": _double, argument: 8}) == base


def test_unhashable_transform_warns_once_and_gets_a_random_fingerprint() -> None:
    connection = sqlite3.connect(":memory:")

    def lookup(example: dict[str, str]) -> dict[str, object]:
        return {"row": connection.execute("select 1").fetchone()}

    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            first = update_fingerprint(PARENT, "map_unhashable_test", {"function": lookup})
            second = update_fingerprint(PARENT, "map_unhashable_test", {"function": lookup})
    finally:
        connection.close()
    assert first != second
    assert [w.category for w in caught] == [UnhashableTransformWarning]
    message = str(caught[0].message)
    assert "closure variable 'connection' of <function " in message
    assert "cannot pickle 'sqlite3.Connection' object" in message
    assert "new_fingerprint=" in message


def test_random_fingerprints_are_fresh() -> None:
    fingerprints = {generate_random_fingerprint() for _ in range(100)}
    assert len(fingerprints) == 100
    assert all(re.fullmatch(r"[0-9a-f]{32}", fp) for fp in fingerprints)
