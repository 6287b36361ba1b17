"""Datasets made by running user code: from_generator."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from dagster_ds.arrow._entries import TableSink
from dagster_ds.arrow._results import Transform, table_result
from dagster_ds.errors import TransformOutputError
from dagster_ds.features import Features, cast_table
from dagster_ds.fingerprint import fingerprint_transform

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
) -> Dataset:
    """Run ``generator(**gen_kwargs)`` once per fingerprint and cache the rows it yields."""
    del cls
    args = {
        "generator": generator,
        "gen_kwargs": gen_kwargs,
        "features": features.to_dict() if features else None,
    }
    fingerprint, tree = fingerprint_transform(_ROOT, "from_generator", args)
    transform = Transform("from_generator", (), fingerprint, tree)

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

    dataset = table_result(None, transform, write, features_for)
    dataset._split = split  # pyright: ignore[reportPrivateUsage]
    return dataset


def _to_table(rows: list[Mapping[str, Any]], features: Features | None) -> pa.Table:
    table = pa.Table.from_pylist(rows, schema=features.arrow_schema if features else None)
    return cast_table(table, features) if features is not None else table
