"""A stored shard read a batch at a time: the rows of its table, and its content fingerprint."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import pyarrow as pa
import pytest

from dagster_ds import Dataset
from dagster_ds.arrow._results import open_table_shard
from dagster_ds.arrow._streamed import stored_batches
from dagster_ds.cache import CacheStore, cache_root
from dagster_ds.orchestration import DatasetStore
from tests import _fast
from tests.conftest import REPO_ROOT

KEY = dg.AssetKey("rows")
ROWS = 150_000  # more than a record batch of an entry (65,536 rows)
MB = 1 << 20


def _where(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> tuple[str, dict[str, Any]]:
    if kind == "local disk":
        return str(tmp_path / "store"), {}
    endpoint = request.getfixturevalue("s3_endpoint")
    return "s3://datasets/store", {"endpoint_url": endpoint, "key": "testing", "secret": "testing"}


def _chain(root: str, options: dict[str, Any]) -> Dataset:
    """A source, a map adding a column (kept beside its input), a map of that map."""
    source = Dataset.from_dict({"n": list(range(ROWS)), "text": [f"row {i}" for i in range(ROWS)]})
    with cache_root(root, options):
        doubled = source.map(lambda batch: {"m": [n * 2 for n in batch["n"]]}, batched=True)
        return doubled.map(lambda batch: {"n": [m + 1 for m in batch["m"]]}, batched=True)


def _entries(dataset: Dataset) -> Iterator[Any]:
    for shard in dataset._shards:  # pyright: ignore[reportPrivateUsage]
        assert shard.table_entry is not None
        yield shard.table_entry


@pytest.mark.parametrize("kind", ["local disk", "s3"])
def test_stored_batches_are_the_rows_of_the_table_read_whole(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    root, options = _where(kind, tmp_path, request)
    dataset = _chain(root, options)
    store = CacheStore(root, storage_options=options)
    for entry in _entries(dataset):
        # The last map keeps 'text' and 'm' of its input, which keeps 'text' of its own.
        assert entry.metadata_item("base") is not None
        batches = stored_batches(entry, store)
        assert batches is not None
        tables = list(batches)
        assert len(tables) > 1
        opened = open_table_shard(entry, store)
        assert opened is not None
        whole = opened[0].table
        assert pa.concat_tables(tables).equals(whole)
        assert whole.column_names == ["n", "text", "m"]


@pytest.mark.parametrize("kind", ["local disk", "s3"])
def test_rows_stored_unread_have_the_content_fingerprint_of_rows_read_first(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    root, options = _where(kind, tmp_path, request)
    store = DatasetStore(root, options)
    unread = _chain(root, options)
    source = Dataset.from_dict({"n": list(range(ROWS)), "text": [f"row {i}" for i in range(ROWS)]})
    with cache_root(root, options):  # the same rows by another recipe, read before storing
        read_first = source.map(
            lambda batch: {"n": [n * 2 + 1 for n in batch["n"]], "m": [n * 2 for n in batch["n"]]},
            batched=True,
        )
    assert read_first["n"][:3] == [1, 3, 5]
    stored = store.save(KEY, unread).content_fingerprint
    assert store.save(KEY, read_first).content_fingerprint == stored
    assert unread["n"][:3] == [1, 3, 5]


def _second_pass_peak(endpoint: str, what: str) -> tuple[int, int]:
    """The Python memory a pass over a stored shard took, and the shard's size."""
    done = _fast.run(  # forked from the warm server: tracemalloc counts from the child's start
        [sys.executable, "-m", "tests.arrow._streamed_child", f"s3://datasets/{what}", what],
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT), "AWS_ENDPOINT_URL_S3": endpoint},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    return figures["peak"], figures["rows"]


@pytest.mark.parametrize("what", ["store", "map"])
def test_a_pass_over_a_stored_shard_on_s3_holds_batches_of_it_not_all(
    s3_endpoint: str, what: str
) -> None:
    peak, rows = _second_pass_peak(s3_endpoint, what)
    # Read whole, the shard (114 MiB) was downloaded and held: 135 MiB measured both for
    # storing it (hashing its rows) and for mapping it. A batch at a time: 47 MiB
    # (store) and 57 MiB (map: a write group of 10,000 rows too), that is a record
    # batch (8 MiB) and its download with the file's read-ahead (8 MiB), which s3fs
    # joins from chunks (twice that for a moment).
    assert peak < 0.6 * rows, f"a {what} pass over {rows / MB:.0f} MB held {peak / MB:.0f} MB"


def test_a_map_reading_its_input_by_batches_records_what_reading_it_whole_does(
    tmp_path: Path,
) -> None:
    recorded = []
    for read_first in (False, True):
        root = str(tmp_path / f"store-{read_first}")
        source = Dataset.from_dict({"n": list(range(ROWS)), "text": ["t"] * ROWS})
        with cache_root(root):
            loaded = source.map(lambda batch: {"m": batch["n"]}, batched=True)
            if read_first:
                assert loaded["n"][:1] == [0]  # its table is open: the map reads it whole
            mapped = loaded.map(lambda batch: {"k": [n % 7 for n in batch["n"]]}, batched=True)
        entry = next(_entries(mapped))
        keys = ("column_key", "read_fingerprints", "column_reads", "base_columns")
        recorded.append(({key: entry.metadata_item(key) for key in keys}, mapped.data))
    (streamed, rows), (whole, expected) = recorded
    assert streamed["column_key"] is not None
    assert streamed == whole
    assert rows.equals(expected)
