from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dagster_ds.errors import FormatOptionError, SchemaMismatchError, UnknownFormatError
from dagster_ds.formats import (
    ParquetWriter,
    iter_batches,
    list_row_groups,
    open_writer,
    write_batches,
)

from ._helpers import names_in, read_all

SUFFIXES = [".parquet", ".jsonl", ".json.gz", ".csv", ".tsv.zst", ".txt.xz", ".arrow"]


class Boom(RuntimeError):
    pass


def failing(table: pa.Table, after: int) -> Iterator[pa.RecordBatch]:
    for i, batch in enumerate(table.to_batches(max_chunksize=1)):
        if i == after:
            raise Boom("the source failed")
        yield batch


@pytest.fixture
def table() -> pa.Table:
    return pa.table({"text": [f"row {i}" for i in range(50)], "n": list(range(50))})


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_failure_mid_write_leaves_no_file(tmp_path: Path, table: pa.Table, suffix: str) -> None:
    target = tmp_path / f"out{suffix}"
    with pytest.raises(Boom):
        write_batches(failing(table, after=20), target)
    assert names_in(tmp_path) == []


@pytest.mark.parametrize("suffix", [".parquet", ".jsonl.gz", ".csv"])
def test_failed_overwrite_keeps_the_old_file(tmp_path: Path, table: pa.Table, suffix: str) -> None:
    target = tmp_path / f"out{suffix}"
    write_batches([table.slice(0, 5)], target)
    before = target.read_bytes()
    with pytest.raises(Boom):
        write_batches(failing(table, after=30), target)
    assert target.read_bytes() == before
    assert names_in(tmp_path) == [target.name]
    write_batches([table], target)
    assert read_all(iter_batches(str(target))).num_rows == 50


def test_failure_on_memory_filesystem(memory_root: str, table: pa.Table) -> None:
    fs = fsspec.filesystem("memory")
    with pytest.raises(Boom):
        write_batches(failing(table, after=10), f"{memory_root}/sub/out.jsonl")
    assert not fs.exists(f"{memory_root}/sub/out.jsonl")
    assert fs.find(memory_root) == []
    assert write_batches([table], f"{memory_root}/sub/out.jsonl") == 50
    assert [p.rsplit("/", 1)[1] for p in fs.find(memory_root)] == ["out.jsonl"]


def test_nothing_is_visible_before_close_and_abort_removes_it(
    tmp_path: Path, table: pa.Table
) -> None:
    target = tmp_path / "out.parquet"
    writer = open_writer(target, row_group_size=10)
    writer.write(table)
    assert not target.exists()
    writer.abort()
    assert names_in(tmp_path) == []
    with open_writer(target) as writer:
        writer.write(table)
    assert target.exists()
    assert writer.rows_written == 50


def test_parquet_row_groups_have_the_requested_size(tmp_path: Path, table: pa.Table) -> None:
    target = tmp_path / "out.parquet"
    with ParquetWriter(target, row_group_size=16) as writer:
        for batch in table.to_batches(max_chunksize=7):
            writer.write(batch)
    assert [g.num_rows for g in list_row_groups(str(target))] == [16, 16, 16, 2]
    by_bytes = tmp_path / "by_bytes.parquet"
    write_batches(table.to_batches(max_chunksize=10), by_bytes, max_row_group_bytes=1)
    assert [g.num_rows for g in list_row_groups(str(by_bytes))] == [10] * 5


def test_schema_is_fixed_by_the_first_batch(tmp_path: Path) -> None:
    target = tmp_path / "out.parquet"
    with open_writer(target) as writer:
        writer.write(pa.table({"a": pa.array([1], pa.int32())}))
        writer.write(pa.table({"a": pa.array([2], pa.int64())}))  # cast to int32
    assert pq.read_table(target).schema.field("a").type == pa.int32()
    with pytest.raises(SchemaMismatchError, match=r"columns \['b'\] instead of \['a'\]"):
        write_batches([pa.table({"a": [1]}), pa.table({"b": [1]})], tmp_path / "bad.jsonl")
    assert not (tmp_path / "bad.jsonl").exists()


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_empty_output_with_a_schema(tmp_path: Path, suffix: str) -> None:
    schema = pa.schema({"text": pa.string()})
    target = tmp_path / f"empty{suffix}"
    assert write_batches([], target, schema=schema) == 0
    assert target.exists()
    typed = "json" in suffix or "sv" in suffix
    options: dict[str, Any] = {"schema": schema} if typed else {}
    rows = read_all(iter_batches(str(target), **options))
    assert rows.num_rows == 0


def test_option_and_format_errors(tmp_path: Path) -> None:
    with pytest.raises(FormatOptionError, match="'lines'"):
        open_writer(tmp_path / "a.csv", lines=True)
    with pytest.raises(UnknownFormatError, match=r"a\.xlsx' from its extension"):
        open_writer(tmp_path / "a.xlsx")
    with pytest.raises(UnknownFormatError, match="Unknown format 'excel'"):
        open_writer(tmp_path / "a.csv", "excel")
    with pytest.raises(FormatOptionError, match="row_group_size"):
        open_writer(tmp_path / "a.parquet", row_group_size=0)
    assert names_in(tmp_path) == []
