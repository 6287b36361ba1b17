"""Dataset exports: files (to_parquet, to_csv, to_json) and Python (to_dict, to_list, to_pandas).

Files are written batch by batch, atomically, to any fsspec URL; the Python exports
give `Json` values decoded, as the anchor.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, BinaryIO

import pyarrow as pa

from dagster_ds.features import features_to_schema_metadata, json_decoders

if TYPE_CHECKING:
    import pandas as pd

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
    from dagster_ds.formats import open_writer  # the writers: only to export

    schema = dataset.features.arrow_schema
    if file_format in ("arrow", "parquet"):  # the features, as the anchor's files hold them
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


def as_pydict(table: pa.Table) -> dict[str, list[Any]]:
    """``table.to_pydict()`` with `Json` values decoded (null stays None), as the anchor."""
    columns = table.to_pydict()
    for name, decode in json_decoders(table.schema).items():
        columns[name] = decode(columns[name])
    return columns


def as_pylist(table: pa.Table) -> list[dict[str, Any]]:
    """``table.to_pylist()`` with `Json` values decoded, as the anchor."""
    if not json_decoders(table.schema):
        return table.to_pylist()
    columns = as_pydict(table)
    names = list(columns)
    return [dict(zip(names, row, strict=True)) for row in zip(*columns.values(), strict=True)]


def as_pandas(table: pa.Table) -> pd.DataFrame:
    """``table.to_pandas()`` with `Json` values decoded (object columns), as the anchor."""
    import pandas as pd

    frame = table.to_pandas()
    for name, decode in json_decoders(table.schema).items():
        values = decode(table.column(name).to_pylist())
        frame[name] = pd.Series(values, index=frame.index, dtype=object)
    return frame
