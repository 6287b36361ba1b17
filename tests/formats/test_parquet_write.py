"""The Parquet writer writes only what Parquet readers can open again."""

from __future__ import annotations

import functools
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dagster_ds.errors import UnsupportedTypeError
from dagster_ds.formats import write_batches


def _lists(count: int, inner: pa.DataType) -> pa.DataType:
    return functools.reduce(lambda data_type, _: pa.list_(data_type), range(count), inner)


def _structs(count: int) -> pa.DataType:
    return functools.reduce(
        lambda data_type, _: pa.struct([("x", data_type)]), range(count), pa.int64()
    )


# The deepest column of each kind that Arrow's Parquet reader still opens.
DEEPEST = {
    "lists": _lists(49, pa.int64()),
    "a struct of lists": pa.struct([("x", _lists(48, pa.int64()))]),
    "structs": _structs(98),
    "lists of a map": _lists(48, pa.map_(pa.string(), pa.int64())),
}
ONE_DEEPER = {
    "lists": _lists(50, pa.int64()),
    "a struct of lists": pa.struct([("x", _lists(49, pa.int64()))]),
    "structs": _structs(99),
    "lists of a map": _lists(49, pa.map_(pa.string(), pa.int64())),
}


@pytest.mark.parametrize("kind", DEEPEST)
def test_the_deepest_readable_column_is_written_and_read_back(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "deep.parquet"
    table = pa.table({"c": pa.array([None], DEEPEST[kind])})
    write_batches([table], path)
    assert pq.read_table(path).equals(table)


@pytest.mark.parametrize("kind", ONE_DEEPER)
def test_a_column_too_deep_to_read_back_is_refused_and_leaves_no_file(
    tmp_path: Path, kind: str
) -> None:
    path = tmp_path / "deep.parquet"
    table = pa.table({"c": pa.array([None], ONE_DEEPER[kind])})
    with pytest.raises(UnsupportedTypeError, match=r"Column 'c' nests too deep.*JSON Lines"):
        write_batches([table], path)
    assert not path.exists()
