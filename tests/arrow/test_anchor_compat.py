"""What a `datasets` user sees after changing one import (issue 28), against `datasets`.

Each case runs the same code on both libraries in this process and compares what comes
back; where we differ on purpose, the test asserts our documented behaviour instead.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest

import dagster_ds

DATA: dict[str, list[Any]] = {"a": [1, 2, 3], "s": ["x", "y", "x"]}


def _doubled(batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
    return {"a2": [value * 2 for value in batch["a"]]}


def _format_restored(module: ModuleType) -> tuple[Any, Any]:
    source = module.Dataset.from_dict(DATA).with_transform(_doubled)
    target = module.Dataset.from_dict(DATA)
    target.set_format(**source.format)
    return target.format["type"], target[0]


def _dict_format(module: ModuleType) -> dict[str, Any]:
    splits = module.DatasetDict({"train": module.Dataset.from_dict(DATA)})
    splits.set_format("numpy", columns=["a"])
    return splits["train"].format


CASES: dict[str, Callable[[ModuleType], Any]] = {
    "format of a transform restored": _format_restored,
    "with_format custom": lambda m: m.Dataset.from_dict(DATA).with_format(
        "custom", transform=_doubled
    )[1],
    "format columns default": lambda m: m.Dataset.from_dict(DATA).with_format("numpy").format,
    "format columns given": lambda m: (
        m.Dataset.from_dict(DATA).with_format("numpy", columns=["a"]).format
    ),
    "DatasetDict format columns": _dict_format,
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_behaves_as_the_anchor(datasets: ModuleType, case: str) -> None:
    assert CASES[case](dagster_ds) == CASES[case](datasets)
