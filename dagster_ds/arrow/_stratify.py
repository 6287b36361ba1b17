"""train_test_split(stratify_by_column=...): each class keeps its share in both splits."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from dagster_ds.arrow._indices import split_sizes
from dagster_ds.errors import InvalidArgumentError

if TYPE_CHECKING:
    from dagster_ds.arrow._dataset import Dataset


def stratified_split(
    dataset: Dataset,
    column: str,
    test_size: float | int | None,
    train_size: float | int | None,
    shuffle: bool,
    seed: int | None,
    generator: Any,
) -> dict[str, Dataset]:
    """``train`` and ``test`` with every class of ``column`` split in the same proportion.

    Each class gets its share of the test rows (largest remainders first, so the
    sizes add up); rows are drawn from each class in a random order given by
    ``seed`` or ``generator``.
    """
    import numpy as np

    from dagster_ds.features import ClassLabel

    dataset._require_columns([column], "train_test_split(stratify_by_column=...)")  # pyright: ignore[reportPrivateUsage]
    if not isinstance(dataset.features[column], ClassLabel):
        raise InvalidArgumentError(
            f"train_test_split(stratify_by_column={column!r}): the column is "
            f"{dataset.features[column]}, not a ClassLabel. Encode it first with "
            f"class_encode_column({column!r})."
        )
    if not shuffle:
        raise InvalidArgumentError(
            "train_test_split: stratify_by_column needs shuffle=True (as the anchor)."
        )
    if seed is not None and generator is not None:
        raise InvalidArgumentError("train_test_split: pass seed or generator, not both.")
    train, test = split_sizes(len(dataset), test_size, train_size)
    rng = generator if generator is not None else np.random.default_rng(seed)
    labels = np.asarray(dataset.with_format("arrow")[column].to_numpy(zero_copy_only=False))
    classes, counts = np.unique(labels, return_counts=True)
    _check_class_counts(column, classes, counts, train, test)
    wanted = counts * test / len(labels)
    taken = np.floor(wanted).astype(int)
    order = np.argsort(-(wanted - taken), kind="stable")
    taken[order[: test - int(taken.sum())]] += 1
    test_rows: list[Any] = []
    train_rows: list[Any] = []
    for label, count in zip(classes, taken, strict=True):
        members = rng.permutation(np.flatnonzero(labels == label))
        test_rows.append(members[:count])
        train_rows.append(members[count:])
    test_positions = rng.permutation(np.concatenate(test_rows))
    train_positions = rng.permutation(np.concatenate(train_rows))[:train]
    return {
        "train": dataset.select(pa.array(train_positions, pa.int64())),
        "test": dataset.select(pa.array(test_positions, pa.int64())),
    }


def _check_class_counts(column: str, classes: Any, counts: Any, train: int, test: int) -> None:
    """Refuse a split some class cannot take part in, with the anchor's words (ValueError)."""
    if len(counts) and counts.min() < 2:
        rare = classes[counts.argmin()].item()
        raise InvalidArgumentError(
            f"train_test_split(stratify_by_column={column!r}): The least populated class in "
            f"{column} column has only 1 member, which is too few (class {rare!r}). The "
            "minimum number of groups for any class cannot be less than 2. Give every class "
            "at least two rows, or split without stratify_by_column."
        )
    for name, size in (("train_size", train), ("test_size", test)):
        if size < len(classes):
            raise InvalidArgumentError(
                f"train_test_split(stratify_by_column={column!r}): The {name} = {size} should "
                f"be greater or equal to the number of classes = {len(classes)}, so that each "
                f"class has a row in each split. Give a larger {name}."
            )


def class_shares(dataset: Dataset, column: str) -> dict[Any, float]:
    """Each class's share of the rows (for checks and tests)."""
    values = dataset.with_format("arrow")[column]
    counts = pc.value_counts(values).to_pylist()
    return {item["values"]: item["counts"] / len(dataset) for item in counts}
