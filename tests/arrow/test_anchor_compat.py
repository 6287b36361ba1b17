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


def _bool_classes(module: ModuleType) -> tuple[list[str], list[Any]]:
    encoded = module.Dataset.from_dict({"b": [True, False, None, True]}).class_encode_column("b")
    return encoded.features["b"].names, encoded["b"][:]


CASES.update(
    {
        "class_encode bools": _bool_classes,
        "repeat None": lambda m: _raised(lambda: m.Dataset.from_dict(DATA).repeat(None)),
    }
)


def _raised(call: Callable[[], Any]) -> tuple[type[BaseException], ...]:
    """The builtin exception classes ``call`` raises (ours also carry dagster_ds's)."""
    try:
        call()
    except Exception as error:  # any error is the answer
        return tuple(kind for kind in (ValueError, KeyError, TypeError) if isinstance(error, kind))
    return ()


@pytest.mark.parametrize(
    ("call", "phrase"),
    [
        (
            lambda m: list(
                m.Dataset.from_dict(DATA)
                .to_iterable_dataset()
                .map(lambda b: {"a": [*b["a"], 4]}, batched=True)
            ),
            "Column lengths mismatch",
        ),
        (
            lambda m: m.concatenate_datasets(
                [m.Dataset.from_dict(DATA), m.Dataset.from_dict(DATA)], axis=1
            ),
            "duplicated",
        ),
        (
            lambda m: m.concatenate_datasets(
                [
                    m.Dataset.from_dict(DATA).to_iterable_dataset(),
                    m.Dataset.from_dict(DATA).to_iterable_dataset(),
                ],
                axis=1,
            ),
            "duplicated",
        ),
        (
            lambda m: (
                m.Dataset.from_dict({"l": [0] * 10 + [1]})
                .class_encode_column("l")
                .train_test_split(test_size=0.2, stratify_by_column="l", seed=0)
            ),
            "least populated class",
        ),
        (
            lambda m: (
                m.Dataset.from_dict({"l": [0, 0, 1, 1, 2, 2]})
                .class_encode_column("l")
                .train_test_split(test_size=2, stratify_by_column="l", seed=0)
            ),
            "greater or equal to the number of classes",
        ),
        (lambda m: m.Dataset.from_dict(DATA).repeat(None), "indefinite repetition"),
    ],
)
def test_errors_carry_the_anchors_phrase(
    datasets: ModuleType, call: Callable[[ModuleType], Any], phrase: str
) -> None:
    """Migrating code matches errors with ``pytest.raises(ValueError, match=...)``."""
    with pytest.raises(ValueError, match=phrase):
        call(datasets)
    with pytest.raises(ValueError, match=phrase):
        call(dagster_ds)


@pytest.mark.parametrize(
    "function", [lambda b: {"a": [*b["a"], 4]}, lambda b: {"n": [1], "m": [1, 2]}]
)
def test_a_batched_map_of_the_wrong_length_says_column_lengths_mismatch(
    function: Callable[[dict[str, Any]], Any],
) -> None:
    """The anchor's streaming phrase; its map-style one (an `ArrowInvalid`) names no phrase."""
    with pytest.raises(ValueError, match="Column lengths mismatch"):
        dagster_ds.Dataset.from_dict(DATA).map(function, batched=True)


@pytest.mark.parametrize(
    "make",
    [
        lambda torch, b: {"t": [torch.ones(2, dtype=torch.float32) for _ in b["a"]]},
        lambda torch, b: {"t": torch.ones((len(b["a"]), 2, 2), dtype=torch.float32)},
        lambda torch, b: {"t": [torch.tensor(1.5, dtype=torch.float32) for _ in b["a"]]},
        lambda torch, b: {"t": [torch.ones((2, 2), dtype=torch.int8) for _ in b["a"]]},
    ],
)
def test_map_keeps_the_dtype_of_tensors(
    datasets: ModuleType, make: Callable[[Any, dict[str, Any]], Any]
) -> None:
    torch = pytest.importorskip("torch")

    def typed(module: ModuleType) -> str:
        mapped = module.Dataset.from_dict(DATA).map(lambda b: make(torch, b), batched=True)
        return str(mapped.features["t"])

    assert typed(dagster_ds) == typed(datasets)


# Last: every module-level case above is in CASES by now.
@pytest.mark.parametrize("case", sorted(CASES))
def test_behaves_as_the_anchor(datasets: ModuleType, case: str) -> None:
    assert CASES[case](dagster_ds) == CASES[case](datasets)
