"""Files of `Image` and `Audio` columns stored inside a table, as a push writes them."""

from __future__ import annotations

import os
from typing import Any

import pyarrow as pa

from dagster_ds.features._decode import column_features
from dagster_ds.features._media import STORAGE_TYPE, Media


def embed_files(table: pa.Table | pa.RecordBatch) -> pa.Table | pa.RecordBatch:
    """``table`` with the files of its `Image`/`Audio` columns stored inside it.

    What a push does, as the anchor: a value stored by path alone gets the file's
    bytes, and its path becomes the file name (the folder means nothing elsewhere).
    Columns of other features, and values that already hold bytes, are kept.
    """
    media = {
        name: feature
        for name, feature in column_features(table.schema).items()
        if isinstance(feature, Media)
    }
    for name, feature in media.items():
        index = table.schema.get_field_index(name)
        column = table.column(index)
        values: list[Any] = column.to_pylist()
        if not any(v is not None and v.get("bytes") is None for v in values):
            continue
        embedded = [
            None
            if value is None
            else {
                "bytes": feature.file_bytes(value)[0],
                "path": os.path.basename(value["path"]) if value.get("path") else None,
            }
            for value in values
        ]
        array = pa.array(embedded, STORAGE_TYPE)
        field = table.schema.field(index)
        table = table.set_column(index, field, array)  # pyright: ignore[reportArgumentType]
    return table
