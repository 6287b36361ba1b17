"""Dataset.to_parquet / to_csv / to_json: batch by batch, atomic, any fsspec URL."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from dagster_ds.features import features_to_schema_metadata
from dagster_ds.formats import write_batches

if TYPE_CHECKING:
    from dagster_ds.arrow._dataset import Dataset

_EXPORT_BATCH = 10_000


def export(
    dataset: Dataset,
    path: str,
    file_format: str,
    batch_size: int | None,
    storage_options: Mapping[str, Any] | None,
    options: Mapping[str, Any],
) -> int:
    """Write ``dataset``'s rows (indices applied) to ``path``; return the rows written."""
    schema = dataset.features.arrow_schema
    if file_format == "parquet":
        schema = schema.with_metadata(features_to_schema_metadata(dataset.features))

    def batches() -> Iterator[pa.Table]:
        for table in dataset._iter_tables(batch_size or _EXPORT_BATCH):  # pyright: ignore[reportPrivateUsage]
            yield table.cast(schema) if table.schema != schema else table

    return write_batches(
        batches(), path, file_format, schema=schema, storage_options=storage_options, **options
    )
