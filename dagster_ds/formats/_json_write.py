"""JSON Lines and JSON array writing, with the anchor's ``to_json`` conventions."""

from __future__ import annotations

import datetime
import decimal
import json
import os
from collections.abc import Mapping
from typing import Any, BinaryIO

import pyarrow as pa
import pyarrow.compute as pc

from dagster_ds.errors import FormatOptionError, UnsupportedTypeError
from dagster_ds.formats._sink import BatchWriter
from dagster_ds.formats._text_columns import unsupported


def _default(value: object) -> object:
    """JSON for the Python values Arrow gives that ``json`` does not know."""
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    if isinstance(value, decimal.Decimal):
        return float(value)
    raise TypeError(f"{type(value).__name__} {value!r} has no JSON form")


class JsonWriter(BatchWriter):
    r"""Writes batches as JSON Lines (default) or one JSON array, as ``Dataset.to_json``.

    Records are objects in column order (``orient="records"``); with ``lines=True``
    one per line, otherwise one array, streamed (``[`` first, ``]`` at close) so memory
    stays bounded by one batch, where the anchor refuses more than one batch. Like
    pandas, NaN and infinite floats are written as ``null``, and the output ends with a
    newline (an empty JSON Lines file is empty; an empty array is ``[]``). Unlike
    pandas, text is written as UTF-8 rather than ``\u`` escapes (``ensure_ascii=True``
    for those), and timestamps as ISO 8601 strings. Compression follows the extension.

    Example:
        >>> import pathlib, tempfile
        >>> import pyarrow as pa
        >>> path = tempfile.mkdtemp() + "/train.jsonl"
        >>> with JsonWriter(path) as writer:
        ...     writer.write(pa.table({"text": ["a", None], "score": [0.5, float("nan")]}))
        >>> print(pathlib.Path(path).read_text(), end="")
        {"text":"a","score":0.5}
        {"text":null,"score":null}
    """

    format = "json"

    def __init__(
        self,
        url: str | os.PathLike[str] | BinaryIO,
        *,
        schema: pa.Schema | None = None,
        storage_options: Mapping[str, Any] | None = None,
        lines: bool = True,
        orient: str = "records",
        ensure_ascii: bool = False,
    ) -> None:
        """Open the file.

        Args:
            url: Target path or fsspec URL, or a file object opened in binary mode.
            schema: Schema of the file (default: the first batch's).
            storage_options: Passed to the fsspec filesystem.
            lines: One object per line (JSON Lines); False writes one JSON array.
            orient: Only ``"records"``, the anchor's default.
            ensure_ascii: Escape non-ASCII characters.
        """
        if orient != "records":
            raise FormatOptionError(
                f"JSON orient {orient!r} is not supported; only 'records' (one object per "
                "row) is, which is the default of Dataset.to_json."
            )
        self._lines = lines
        self._encoder = json.JSONEncoder(
            ensure_ascii=ensure_ascii, allow_nan=False, separators=(",", ":"), default=_default
        )
        self._first = True
        super().__init__(url, schema=schema, storage_options=storage_options)

    def _check_schema(self, schema: pa.Schema) -> None:
        for field in schema:
            if unsupported(field.type) and not pa.types.is_nested(field.type):
                raise UnsupportedTypeError(
                    f"Column {field.name!r} of type {field.type} (bytes) cannot be written to "
                    f"JSON {self.url!r}. Decode or base64-encode it to a string column first, "
                    "or write Parquet."
                )

    def _start(self, schema: pa.Schema) -> None:
        if not self._lines:
            self._file.write(b"[")

    def _write_batch(self, batch: pa.RecordBatch) -> None:
        encode = self._encoder.encode
        try:
            records = [encode(row) for row in _without_nan(batch).to_pylist()]
        except (TypeError, ValueError) as error:
            raise UnsupportedTypeError(
                f"A row of the batch cannot be written to JSON {self.url!r}: {error}. Cast "
                "the column to a JSON-friendly type (string, number, list, struct) first."
            ) from error
        if self._lines:
            text = "\n".join(records) + "\n"
        else:
            text = ("" if self._first else ",") + ",".join(records)
        self._first = False
        self._file.write(text.encode())

    def _finish(self) -> None:
        if not self._lines:
            self._file.write(b"]\n")


def _without_nan(batch: pa.RecordBatch) -> pa.RecordBatch:
    """NaN and infinities of top-level float columns made null, as pandas writes them."""
    floats = [i for i, field in enumerate(batch.schema) if pa.types.is_floating(field.type)]
    if not floats:
        return batch
    arrays = list(batch.columns)
    for i in floats:
        arrays[i] = pc.if_else(pc.is_finite(arrays[i]), arrays[i], None)
    return pa.RecordBatch.from_arrays(arrays, schema=batch.schema)
