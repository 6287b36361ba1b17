"""Fixtures for the streaming tests: small sharded files, and the anchor as an oracle."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dagster_ds import IterableDataset

ROWS_PER_FILE = 40


def make_table(start: int, rows: int) -> pa.Table:
    ids = list(range(start, start + rows))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "text": pa.array([f"row {i} " + "x" * (i % 7) for i in ids]),
            "label": pa.array([i % 3 for i in ids], pa.int64()),
            "score": pa.array([i / 4 for i in ids], pa.float64()),
        }
    )


@pytest.fixture
def parquet_dir(tmp_path: Path) -> Path:
    """Three Parquet files of 40 rows each, in row groups of 10 rows."""
    folder = tmp_path / "parquet"
    folder.mkdir()
    for index in range(3):
        table = make_table(index * ROWS_PER_FILE, ROWS_PER_FILE)
        pq.write_table(table, folder / f"part-{index}.parquet", row_group_size=10)
    return folder


@pytest.fixture
def jsonl_dir(tmp_path: Path) -> Path:
    """The same rows as `parquet_dir`, as three JSON Lines files."""
    folder = tmp_path / "jsonl"
    folder.mkdir()
    for index in range(3):
        rows = make_table(index * ROWS_PER_FILE, ROWS_PER_FILE).to_pylist()
        text = "".join(json.dumps(row) + "\n" for row in rows)
        (folder / f"part-{index}.jsonl").write_text(text)
    return folder


def numbers(n: int, num_shards: int = 1) -> IterableDataset:
    """A stream of ``{"a": i, "b": str(i)}`` for i < n."""
    return IterableDataset.from_dict(
        {"a": list(range(n)), "b": [str(i) for i in range(n)]}, num_shards=num_shards
    )
