"""Arrow tables from the user's Python values: what `from_dict`/`from_list` build.

Shared by `Dataset.from_dict` and `IterableDataset.from_dict`, so a table built
from the same columns is the same table, with the same fingerprint, whichever
kind of dataset holds it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from dagster_ds.features import (
    Features,
    cast_table,
    holds_python_encoded,
    image_columns,
    with_features_metadata,
)
from dagster_ds.fingerprint import Hasher
from dagster_ds.formatting._outputs import mixed_as_json


def columns_of_rows(rows: Sequence[Mapping[str, Any]]) -> dict[str, list[Any]]:
    """Rows (dicts) as columns: every key any row has, None where a row lacks it."""
    names: dict[str, None] = {}
    for row in rows:
        names.update(dict.fromkeys(row))
    return {name: [row.get(name) for row in rows] for name in names}


def table_of_columns(
    mapping: Mapping[str, Sequence[Any]],
    features: Features | None = None,
    *,
    mixed_as_json_columns: bool = False,
) -> tuple[pa.Table, Features | None]:
    """The Arrow table of a dict of columns, and its features if known.

    As the anchor: with ``features``, label names become integers and `Json`
    values text; without, PIL images make an `Image` column, and
    ``mixed_as_json_columns`` stores a column of mixed types as `Json`.
    """
    schema = features.arrow_schema if features is not None else None
    columns: dict[str, Any] = dict(mapping)
    if mixed_as_json_columns and features is None:
        columns = {name: mixed_as_json(list(values)) for name, values in columns.items()}
    if features is not None:
        for name, values in columns.items():
            if name in features and holds_python_encoded(features[name]):
                columns[name] = features.encode_column(values, name)
    images = image_columns(columns) if features is None else {}
    for name, feature in images.items():
        columns[name] = feature.encoded_array(list(columns[name]))  # pyright: ignore[reportUnknownMemberType]
    try:
        table = pa.Table.from_pydict(columns, schema=schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        table = pa.Table.from_pydict(columns)  # cast to the features (lists of Json, say)
    if images:
        features = Features({**Features.from_arrow_schema(table.schema), **images})
    return table, features


def typed_table(table: pa.Table, features: Features | None) -> tuple[pa.Table, Features, str]:
    """``table`` cast to ``features`` (with their schema metadata), the features, its fingerprint.

    The fingerprint hashes the rows and the features, however the table is chunked.
    """
    if features is not None:
        table = cast_table(table, features)
    features = features or Features.from_arrow_schema(table.schema)
    fingerprint = Hasher.hash({"table": table, "features": features.to_dict()})
    return with_features_metadata(table, features), features, fingerprint
