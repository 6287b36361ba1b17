from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from dagster_ds import Dataset, load_dataset
from dagster_ds.errors import (
    ColumnNotFoundError,
    InvalidFilterError,
    MalformedFileError,
    RowGroupIndexError,
)
from dagster_ds.formats import (
    ReadStats,
    iter_batches,
    iter_parquet_batches,
    list_row_groups,
    read_parquet_schema,
    read_row_group,
    write_batches,
)

from ._helpers import read_all

ROWS = 1000
GROUP = 100


@pytest.fixture
def table() -> pa.Table:
    ids = pa.array(range(ROWS), pa.int64())
    return pa.table(
        {
            "id": ids,
            "bucket": pc.divide(ids, 100),
            "name": pa.array([f"name-{i}" for i in range(ROWS)]),
            "weight": pa.array([i / 3 for i in range(ROWS)], pa.float32()),
        }
    )


@pytest.fixture
def path(tmp_path: Path, table: pa.Table) -> str:
    target = str(tmp_path / "t.parquet")
    # Batches of 64 rows: the writer still makes row groups of exactly GROUP rows.
    write_batches(table.to_batches(max_chunksize=64), target, row_group_size=GROUP)
    return target


def test_round_trip_keeps_types_and_row_groups(path: str, table: pa.Table) -> None:
    assert read_all(iter_parquet_batches(path)).equals(table)
    groups = list_row_groups(path)
    assert [g.index for g in groups] == list(range(10))
    assert {g.num_rows for g in groups} == {GROUP}
    assert pq.ParquetFile(path).metadata.num_row_groups == 10


def test_batch_size_bounds_batches(path: str) -> None:
    sizes = [b.num_rows for b in iter_parquet_batches(path, batch_size=30)]
    assert max(sizes) == 30
    assert sum(sizes) == ROWS


def test_column_projection(path: str, table: pa.Table) -> None:
    result = read_all(iter_parquet_batches(path, columns=["name", "id"]))
    assert result.schema.names == ["name", "id"]
    assert result.equals(table.select(["name", "id"]))
    with pytest.raises(ColumnNotFoundError, match="'nope'"):
        iter_parquet_batches(path, columns=["nope"])


def test_filters_prune_row_groups_by_statistics(path: str, table: pa.Table) -> None:
    stats = ReadStats()
    result = read_all(
        iter_parquet_batches(path, filters=[("id", ">=", 250), ("id", "<", 280)], stats=stats)
    )
    assert result.column("id").to_pylist() == list(range(250, 280))
    assert (stats.row_groups_total, stats.row_groups_read) == (10, 1)
    assert stats.rows_read == GROUP

    stats = ReadStats()
    either = [[("id", "<", 5)], [("id", ">", 990)]]
    result = read_all(iter_parquet_batches(path, columns=["name"], filters=either, stats=stats))
    assert result.schema.names == ["name"]
    assert result.num_rows == 5 + 9
    assert stats.row_groups_read == 2

    stats = ReadStats()
    expression = (pc.field("bucket") == 7) & (pc.field("name") != "name-701")
    result = read_all(iter_parquet_batches(path, filters=expression, stats=stats))
    assert result.num_rows == 99
    assert result.equals(table.filter(expression))
    assert stats.row_groups_read == 1


def test_filter_matching_nothing_reads_nothing_and_keeps_the_schema(path: str) -> None:
    stats = ReadStats()
    batches = list(
        iter_parquet_batches(path, columns=["id"], filters=[("id", ">", 10**6)], stats=stats)
    )
    assert [b.num_rows for b in batches] == [0]
    assert batches[0].schema.names == ["id"]
    assert stats.row_groups_read == 0


def test_invalid_filters(path: str) -> None:
    with pytest.raises(InvalidFilterError, match="not a valid operator"):
        iter_parquet_batches(path, filters=[("id", "~", 1)])
    with pytest.raises(InvalidFilterError, match="nope"):
        iter_parquet_batches(path, filters=[("nope", "==", 1)])
    with pytest.raises(InvalidFilterError, match="empty"):
        iter_parquet_batches(path, filters=[])


def test_single_row_group(path: str, table: pa.Table) -> None:
    group = read_row_group(path, 3, columns=["id"])
    assert group.column("id").to_pylist() == list(range(300, 400))
    shard = read_all(iter_parquet_batches(path, row_groups=[7, 2]))
    assert shard.equals(pa.concat_tables([table.slice(700, 100), table.slice(200, 100)]))
    with pytest.raises(RowGroupIndexError, match="10 row group"):
        read_row_group(path, 10)


@pytest.mark.parametrize("start", [0, 1, 99, 100, 250, 999, 1000, 1500])
def test_resume_from_a_row_skips_whole_row_groups(path: str, table: pa.Table, start: int) -> None:
    stats = ReadStats()
    result = read_all(iter_parquet_batches(path, start_row=start, batch_size=64, stats=stats))
    assert result.equals(table.slice(start))
    assert stats.row_groups_read == 10 - min(start // GROUP, 10)


def test_resume_counts_rows_after_the_filter(path: str, table: pa.Table) -> None:
    filters = [("id", ">=", 150), ("id", "<", 450)]
    full = read_all(iter_parquet_batches(path, filters=filters))
    resumed = read_all(iter_parquet_batches(path, filters=filters, start_row=120))
    assert resumed.equals(full.slice(120))


def test_memory_url_and_dispatch(memory_root: str, table: pa.Table) -> None:
    url = f"{memory_root}/t.parquet"
    write_batches([table], url, row_group_size=250)
    assert [g.num_rows for g in list_row_groups(url)] == [250] * 4
    stats = ReadStats()
    result = read_all(iter_batches(url, filters=pc.field("id") < 10, stats=stats))
    assert result.num_rows == 10
    assert stats.row_groups_read == 1


def test_not_parquet_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"definitely not parquet, but long enough to have a footer")
    with pytest.raises(MalformedFileError, match="not a valid Parquet file"):
        iter_parquet_batches(str(bad))


def _flip(path: str, position: int) -> None:
    data = bytearray(Path(path).read_bytes())
    data[position] ^= 0xFF
    Path(path).write_bytes(bytes(data))


def _footer_start(path: str) -> int:
    data = Path(path).read_bytes()
    return len(data) - 8 - int.from_bytes(data[-8:-4], "little")


FOOTER_READERS: dict[str, Callable[[str], Any]] = {
    "load_dataset": lambda p: load_dataset("parquet", data_files=p, split="train"),
    "streaming rows": lambda p: list(
        load_dataset("parquet", data_files=p, split="train", streaming=True)
    ),
    "streaming features": lambda p: (
        load_dataset("parquet", data_files=p, split="train", streaming=True).features
    ),
    "iter_parquet_batches": lambda p: list(iter_parquet_batches(p)),
    "with filters": lambda p: list(iter_parquet_batches(p, filters=[("id", ">", 5)])),
    "list_row_groups": list_row_groups,
    "read_row_group": lambda p: read_row_group(p, 0),
    "read_parquet_schema": read_parquet_schema,
}


@pytest.mark.parametrize("read", FOOTER_READERS.values(), ids=FOOTER_READERS.keys())
def test_a_flipped_byte_in_the_footer_names_the_file(path: str, read: Callable[[str], Any]) -> None:
    _flip(path, _footer_start(path))
    with pytest.raises(MalformedFileError, match=r"t\.parquet.*footer is corrupt.*thrift") as info:
        read(path)
    assert info.value.path == path


@pytest.mark.parametrize("where", ["arrow schema", "column name"])
def test_a_footer_whose_arrow_schema_or_names_do_not_decode_names_the_file(
    path: str, where: str
) -> None:
    footer = Path(path).read_bytes()[_footer_start(path) :]
    if where == "arrow schema":  # a byte of its base64 text
        position, reason = footer.index(b"ARROW:schema") + 20, "base64"
    else:  # the first byte of a column's name
        position, reason = footer.index(b"bucket"), "utf-8"
    _flip(path, _footer_start(path) + position)
    with pytest.raises(MalformedFileError, match=rf"t\.parquet.*footer is corrupt.*{reason}"):
        list_row_groups(path)


@pytest.mark.parametrize("read", FOOTER_READERS.values(), ids=FOOTER_READERS.keys())
def test_features_metadata_that_is_not_json_names_the_file(
    tmp_path: Path, read: Callable[[str], Any]
) -> None:
    """A flipped byte in the features' JSON of the footer: the file named, not a FeatureError."""
    path = str(tmp_path / "t.parquet")
    table = pa.table({"id": list(range(20))}).replace_schema_metadata(
        {b"huggingface": b'{"info": {"features": {"id": {"dtype": "int64"\xff'}
    )
    pq.write_table(table, path, row_group_size=10)
    with pytest.raises(MalformedFileError, match=r"t\.parquet.*footer is corrupt.*not JSON"):
        read(path)


def test_a_missing_file_is_not_called_corrupt(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError) as info:
        list_row_groups(str(tmp_path / "nope.parquet"))
    assert not isinstance(info.value, MalformedFileError)


def _flip_in_data_page(path: str, row_group: int) -> None:
    """Flip a byte near the end of the first column's chunk: inside its last data page."""
    chunk = pq.read_metadata(path).row_group(row_group).column(0)
    start = chunk.dictionary_page_offset or chunk.data_page_offset
    _flip(path, start + chunk.total_compressed_size - 2)


def _rows() -> dict[str, list[Any]]:
    return {"id": list(range(ROWS)), "name": [f"n{i}" for i in range(ROWS)]}


WRITERS: dict[str, Callable[[str], object]] = {
    "Dataset.to_parquet": lambda p: Dataset.from_dict(_rows()).to_parquet(p, row_group_size=GROUP),
    "IterableDataset.to_parquet": lambda p: (
        Dataset.from_dict(_rows()).to_iterable_dataset().to_parquet(p, row_group_size=GROUP)
    ),
    "write_batches": lambda p: write_batches([pa.table(_rows())], p, row_group_size=GROUP),
}
PAGE_READERS: dict[str, Callable[[str], Any]] = {
    "load_dataset": lambda p: load_dataset("parquet", data_files=p, split="train"),
    "streaming": lambda p: list(
        load_dataset("parquet", data_files=p, split="train", streaming=True)
    ),
    "read ahead": lambda p: list(iter_parquet_batches(p, batch_size=GROUP)),
}


@pytest.mark.parametrize("write", WRITERS.values(), ids=WRITERS.keys())
@pytest.mark.parametrize("read", PAGE_READERS.values(), ids=PAGE_READERS.keys())
def test_a_flipped_byte_in_a_data_page_of_a_file_we_wrote_names_the_file(
    tmp_path: Path, write: Callable[[str], object], read: Callable[[str], Any]
) -> None:
    path = str(tmp_path / "ours.parquet")
    write(path)
    assert pq.read_metadata(path).num_row_groups == ROWS // GROUP
    _flip_in_data_page(path, 3)
    with pytest.raises(MalformedFileError, match=r"ours\.parquet.*row group 3.*CRC") as info:
        read(path)
    assert info.value.path == path


def test_a_file_of_one_big_row_group_is_read_page_by_page(tmp_path: Path) -> None:
    # 48 MB of text in a single row group: reading its first batch must not read the
    # whole column chunk into memory first (Arrow's pre-buffering did).
    path = tmp_path / "big.parquet"
    text = pa.array(["x" * 1000] * 48_000)
    pq.write_table(pa.table({"text": text}), path, compression="none", use_dictionary=False)
    del text
    before = pa.total_allocated_bytes()
    batches = iter_parquet_batches(str(path), batch_size=1000)
    first = next(batches)
    held = pa.total_allocated_bytes() - before
    assert first.num_rows == 1000
    # The rows decoded at once (``DECODE_BYTES``, 8 MiB) and a page buffer.
    assert held < 16 << 20, f"{held / 2**20:.0f} MB held to read a 1 MB batch"
    del batches
