"""Concatenating and interleaving map-style datasets (the anchor's combine.py semantics)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from dagster_ds.arrow._column_lineage import combined_column_sources
from dagster_ds.arrow._entries import TableSink
from dagster_ds.arrow._info import merged_prose
from dagster_ds.arrow._results import Transform, table_result
from dagster_ds.errors import DuplicateColumnError, InvalidArgumentError, RowCountMismatchError
from dagster_ds.features import Features, conform, unify_schemas
from dagster_ds.fingerprint import LineageStep, fingerprint_transform

if TYPE_CHECKING:
    from dagster_ds.arrow._dataset import Dataset

_BATCH = 10_000


def merged_features(features: Sequence[Features], schema: pa.Schema) -> Features:
    """Each column's feature from the first dataset where it is not all-null."""
    merged: dict[str, Any] = {}
    for name in schema.names:
        for each in features:
            if name in each and (name not in merged or _is_null(merged[name])):
                merged[name] = each[name]
    return Features(merged)


def _is_null(feature: Any) -> bool:
    return getattr(feature, "dtype", None) == "null"


def concatenate_map_style(datasets: Sequence[Dataset], axis: int) -> Dataset:
    """The rows of ``datasets`` one after the other (axis 0) or side by side (axis 1), cached.

    The result is of the first dataset's class.
    """
    fingerprints = [dataset.fingerprint for dataset in datasets]
    args = {"fingerprints": fingerprints, "axis": axis}
    fingerprint, tree = fingerprint_transform(fingerprints[0], "concatenate_datasets", args)
    transform = Transform("concatenate_datasets", tuple(fingerprints), fingerprint, tree)
    if axis == 0:
        schema = unify_schemas(
            [dataset.features.arrow_schema for dataset in datasets], "concatenate datasets"
        )
        features = merged_features([dataset.features for dataset in datasets], schema)

        def write(sink: TableSink) -> None:
            for dataset in datasets:
                for batch in _batches(dataset):
                    sink.write(conform(batch, schema))
            if sink.num_rows == 0:
                sink.write(schema.empty_table())

    else:
        _check_side_by_side(datasets)
        features = Features(
            {name: feature for dataset in datasets for name, feature in dataset.features.items()}
        )

        def write(sink: TableSink) -> None:
            for start in range(0, len(datasets[0]), _BATCH):
                tables: list[pa.Table] = [
                    dataset._read(slice(start, start + _BATCH))  # pyright: ignore[reportPrivateUsage]
                    for dataset in datasets
                ]
                columns = [column for table in tables for column in table.columns]
                names = [name for table in tables for name in table.column_names]
                sink.write(pa.table(columns, names=names))
            if sink.num_rows == 0:
                sink.write(features.arrow_schema.empty_table())

    result = table_result(None, transform, write, lambda _schema: features, cls=type(datasets[0]))
    # As the anchor: the parts' common format (or none if they differ), their merged info.
    if all(dataset.format == datasets[0].format for dataset in datasets):
        result._output_format = datasets[0]._output_format  # pyright: ignore[reportPrivateUsage]
    result._prose = merged_prose([dataset._prose for dataset in datasets])  # pyright: ignore[reportPrivateUsage]
    sources = combined_column_sources([d.column_names for d in datasets], result.column_names)
    result._lineage = combined_lineage(datasets, transform.step().with_columns(sources))  # pyright: ignore[reportPrivateUsage]
    return result


def combined_lineage(datasets: Sequence[Dataset], step: LineageStep) -> tuple[LineageStep, ...]:
    """The steps that made each of ``datasets`` (each once, in order), then ``step``."""
    steps: dict[LineageStep, None] = {}
    for dataset in datasets:
        steps.update(dict.fromkeys(dataset.lineage))
    return (*steps, step)


def _batches(dataset: Dataset) -> list[pa.RecordBatch]:
    table = dataset._read(slice(None))  # pyright: ignore[reportPrivateUsage]
    return table.to_batches(max_chunksize=_BATCH)


def _check_side_by_side(datasets: Sequence[Dataset]) -> None:
    lengths = [len(dataset) for dataset in datasets]
    if len(set(lengths)) > 1:
        raise RowCountMismatchError(
            f"concatenate_datasets(axis=1) needs datasets with the same number of rows, got "
            f"{lengths}. Select the same rows from each (dataset.select(range(n)))."
        )
    names = [name for dataset in datasets for name in dataset.column_names]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise DuplicateColumnError(
            f"concatenate_datasets(axis=1): column(s) {duplicates} are duplicated (they "
            "appear in more than one dataset); rename or remove them first "
            "(rename_column, remove_columns)."
        )


def interleave_map_style(
    datasets: Sequence[Dataset],
    probabilities: Sequence[float] | None,
    seed: int | None,
    stopping_strategy: str,
) -> Dataset:
    """The anchor's map-style interleave: the concatenation, seen through interleaved indices."""
    concatenated = concatenate_map_style(datasets, axis=0)
    lengths = [len(dataset) for dataset in datasets]
    offsets = [0, *itertools.accumulate(lengths)][:-1]
    if probabilities is None:
        order = _cycled(lengths, stopping_strategy)
    else:
        order = _sampled(lengths, probabilities, seed, stopping_strategy)
    return concatenated.select([offsets[source] + row for source, row in order])


def _cycled(lengths: list[int], strategy: str) -> list[tuple[int, int]]:
    """(source, row) pairs taking turns: as many rounds as the strategy allows."""
    count = len(lengths)
    if strategy == "first_exhausted":
        return [(s, r) for r in range(min(lengths)) for s in range(count)]
    if strategy == "all_exhausted":
        longest = max(lengths)
        return [(s, r % lengths[s]) for r in range(longest) for s in range(count) if lengths[s]]
    return [(s, r) for r in range(max(lengths)) for s in range(count) if r < lengths[s]]


def _sampled(
    lengths: list[int], probabilities: Sequence[float], seed: int | None, strategy: str
) -> list[tuple[int, int]]:
    """(source, row) pairs with each source drawn at random, as the anchor draws (numpy's)."""
    count = len(lengths)
    if len(probabilities) != count:
        raise InvalidArgumentError(
            f"interleave_datasets: {len(probabilities)} probabilities for {count} datasets."
        )
    drawable = [p > 0 for p in probabilities]
    if any(lengths[i] == 0 and drawable[i] for i in range(count)):
        raise InvalidArgumentError(
            f"interleave_datasets: a dataset with a non-zero probability is empty (lengths "
            f"{lengths}); remove it or give it probability 0."
        )
    from dagster_ds.streaming import SourceDraws  # the streaming engine: only here

    draws = SourceDraws(seed, probabilities)
    taken = [0] * count
    exhausted = [not drawable[i] for i in range(count)]
    stop = any if strategy == "first_exhausted" else all
    order: list[tuple[int, int]] = []
    while not stop(exhausted[i] for i in range(count) if drawable[i]):
        source = draws.draw()
        if strategy == "all_exhausted_without_replacement" and taken[source] >= lengths[source]:
            continue
        order.append((source, taken[source] % lengths[source]))
        taken[source] += 1
        if taken[source] >= lengths[source]:
            exhausted[source] = True
    return order
