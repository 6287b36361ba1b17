"""Dataset.to_parquet / to_csv / to_json: batch by batch, atomic, any fsspec URL."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, BinaryIO

import pyarrow as pa

from dagster_ds.features import features_to_schema_metadata
from dagster_ds.formats import open_writer

if TYPE_CHECKING:
    from dagster_ds.arrow._dataset import Dataset

_EXPORT_BATCH = 10_000


def export(
    dataset: Dataset,
    path: str | os.PathLike[str] | BinaryIO,
    file_format: str,
    batch_size: int | None,
    storage_options: Mapping[str, Any] | None,
    options: Mapping[str, Any],
) -> int:
    """Write ``dataset``'s rows (indices applied) to ``path``; return the bytes written.

    ``path`` may be a file object opened in binary mode (as the anchor's ``path_or_buf``).
    """
    schema = dataset.features.arrow_schema
    if file_format == "parquet":
        schema = schema.with_metadata(features_to_schema_metadata(dataset.features))

    def batches() -> Iterator[pa.Table]:
        for table in dataset._iter_tables(batch_size or _EXPORT_BATCH):  # pyright: ignore[reportPrivateUsage]
            yield table.cast(schema) if table.schema != schema else table

    with open_writer(
        path, file_format, schema=schema, storage_options=storage_options, **options
    ) as writer:
        for batch in batches():
            writer.write(batch)
    return writer.bytes_written
