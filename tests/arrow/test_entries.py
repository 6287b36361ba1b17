"""TableSink: outputs gathered into record batches of ~64K rows or ~32 MiB."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from dagster_ds.arrow import _entries
from dagster_ds.arrow._entries import TableSink, read_table
from dagster_ds.cache import CacheStore


def _written(tmp_path: Path, tables: list[pa.Table]) -> list[int]:
    """The row counts of the record batches the sink writes for ``tables``."""
    store = CacheStore(str(tmp_path / "store"))
    with store.writer("1" * 32) as writer:
        sink = TableSink(writer)
        for table in tables:
            sink.write(table)
        sink.close()
    entry = store.lookup("1" * 32)
    assert entry is not None
    with entry:
        read = read_table(entry)
        assert read.num_rows == sum(table.num_rows for table in tables)
        return [batch.num_rows for batch in read.to_batches()]


def test_small_outputs_are_gathered_by_rows(tmp_path: Path) -> None:
    tables = [pa.table({"a": list(range(1000))}) for _ in range(100)]
    assert _written(tmp_path, tables) == [66_000, 34_000]


def test_slices_of_a_large_buffer_are_gathered_by_the_rows_they_hold(tmp_path: Path) -> None:
    # Each slice's buffers are the whole 2 MiB column: counted in full, every write would
    # look larger than it is, and the sink would write a batch per slice.
    big = pa.table({"s": ["x" * 20] * 100_000})
    tables = [big.slice(start, 1000) for start in range(0, 100_000, 1000)]
    assert big.get_total_buffer_size() * 20 > _entries._FLUSH_BYTES  # pyright: ignore[reportPrivateUsage]
    assert _written(tmp_path, tables) == [66_000, 34_000]


def test_wide_rows_are_gathered_by_bytes(tmp_path: Path) -> None:
    row = "x" * (1 << 20)  # 1 MiB a row: 8 rows reach the byte limit (8 MiB) first
    tables = [pa.table({"s": [row] * 4}) for _ in range(5)]
    assert _written(tmp_path, tables) == [8, 8, 4]
