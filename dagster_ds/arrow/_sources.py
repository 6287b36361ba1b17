"""Datasets made by running user code: from_generator."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from dagster_ds.arrow._entries import TableSink
from dagster_ds.arrow._results import Transform, given_transform, table_result
from dagster_ds.errors import TransformOutputError
from dagster_ds.features import Features, cast_table
from dagster_ds.fingerprint import fingerprint_transform
from dagster_ds.formatting import rows_to_batch

if TYPE_CHECKING:
    from dagster_ds.arrow._dataset import Dataset

_ROOT = "0" * 32


def dataset_from_generator(
    cls: type[Dataset],
    generator: Callable[..., Iterable[Mapping[str, Any]]],
    features: Features | None,
    gen_kwargs: dict[str, Any],
    split: str | None,
    writer_batch_size: int,
    fingerprint: str | None = None,
) -> Dataset:
    """Run ``generator(**gen_kwargs)`` once per fingerprint and cache the rows it yields.

    The result is a ``cls`` (`Dataset`). ``fingerprint``, when given, names the result
    instead of the generator's hash.
    """
    if fingerprint is not None:
        transform = given_transform("from_generator", (), fingerprint)
    else:
        args = {
            "generator": generator,
            "gen_kwargs": gen_kwargs,
            "features": features.to_dict() if features else None,
        }
        transform = Transform(
            "from_generator", (), *fingerprint_transform(_ROOT, "from_generator", args)
        )

    def write(sink: TableSink) -> None:
        rows: list[Mapping[str, Any]] = []
        for index, row in enumerate(generator(**gen_kwargs)):
            if not isinstance(row, Mapping):
                raise TransformOutputError(
                    f"from_generator: the generator yielded {type(row).__name__} "
                    f"as example {index}; "
                    "yield one dict per example."
                )
            rows.append(row)
            if len(rows) == writer_batch_size:
                sink.write(_to_table(rows, features))
                rows = []
        if rows or sink.num_rows == 0:
            sink.write(_to_table(rows, features))

    def features_for(schema: pa.Schema) -> Features:
        return features if features is not None else Features.from_arrow_schema(schema)

    dataset = table_result(None, transform, write, features_for, cls=cls)
    dataset._split = split  # pyright: ignore[reportPrivateUsage]
    return dataset


def _to_table(rows: list[Mapping[str, Any]], features: Features | None) -> pa.Table:
    """The rows as a table; values of another type than ``features`` say are cast to it.

    A value that does not convert is a `CastError` naming the column and row.
    """
    where = "from_generator: the generator yielded"
    if features is not None:
        try:
            return pa.Table.from_batches([rows_to_batch(rows, features, where)])
        except (TransformOutputError, TypeError, ValueError):  # other types: cast them
            inferred = pa.Table.from_batches([rows_to_batch(rows, None, where)])
            return cast_table(inferred, features)
    return pa.Table.from_pylist(rows)
