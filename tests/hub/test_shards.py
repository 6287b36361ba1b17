"""Output shards from source shards: the anchor's contiguous groups and round robin."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dagster_ds.hub._shards import ShardJob, plan_jobs, shard_runs, split_evenly, write_job

SCHEMA = pa.schema([("row", pa.int64())])


def push_rows(
    sources: list[list[int]], num_shards: int, folder: Path, batch: int
) -> list[list[int | None]]:
    """The rows of each output shard when ``sources`` are written as ``num_shards`` files."""

    def read(index: int) -> Iterator[pa.Table]:
        rows = sources[index]
        for start in range(0, len(rows), batch):
            yield pa.table({"row": rows[start : start + batch]}, schema=SCHEMA)

    out: dict[int, list[int | None]] = {}
    for number, job in enumerate(plan_jobs(len(sources), num_shards)):
        job_folder = folder / f"job-{number}"
        job_folder.mkdir(parents=True)
        for shard in write_job(job, read, SCHEMA, str(job_folder), buffer_bytes=1 << 20):
            out[shard.index] = pq.read_table(shard.path).column("row").to_pylist()
            assert shard.num_rows == len(out[shard.index])
    assert sorted(out) == list(range(num_shards))
    return [out[i] for i in range(num_shards)]


def anchor_rows(sources: list[list[int]], num_shards: int) -> list[list[int | None]]:
    """The anchor's assignment (datasets.IterableDataset._write_parquet_shards), by its helper."""
    from datasets.iterable_dataset import _split_evenly  # pyright: ignore[reportPrivateUsage]

    num_sources = len(sources)
    if num_shards <= num_sources:
        return [
            [row for s in range(*_split_evenly(num_sources, num_shards, i)) for row in sources[s]]
            for i in range(num_shards)
        ]
    out: list[list[int | None]] = [[] for _ in range(num_shards)]
    for s, rows in enumerate(sources):
        first, end = _split_evenly(num_shards, num_sources, s)
        for position, row in enumerate(rows):
            out[first + position % (end - first)].append(row)
    return out


def test_ten_rows_in_one_source_as_twelve_shards(tmp_path: Path) -> None:
    shards = push_rows([list(range(10))], 12, tmp_path, batch=4)
    assert [len(rows) for rows in shards] == [1] * 10 + [0, 0]


def test_ten_rows_in_two_sources_as_five_shards(tmp_path: Path) -> None:
    shards = push_rows([[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]], 5, tmp_path, batch=2)
    assert shards == [[0, 3], [1, 4], [2], [5, 7, 9], [6, 8]]


def test_fewer_outputs_than_sources_are_contiguous_groups(tmp_path: Path) -> None:
    shards = push_rows([[0], [1, 2], [3], [4, 5], [6]], 2, tmp_path, batch=1)
    assert shards == [[0, 1, 2, 3], [4, 5, 6]]


@settings(max_examples=25, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 9), min_size=1, max_size=5),
    num_shards=st.integers(1, 12),
    batch=st.integers(1, 4),
)
def test_the_assignment_is_the_anchors(
    tmp_path_factory: pytest.TempPathFactory, sizes: list[int], num_shards: int, batch: int
) -> None:
    rows = iter(range(sum(sizes)))
    sources = [[next(rows) for _ in range(size)] for size in sizes]
    folder = tmp_path_factory.mktemp("shards")
    assert push_rows(sources, num_shards, folder, batch) == anchor_rows(sources, num_shards)


def test_split_evenly_puts_the_larger_parts_first() -> None:
    assert [split_evenly(10, 4, part) for part in range(4)] == [(0, 3), (3, 6), (6, 8), (8, 10)]


def _shared_blocks(old: bytes, new: bytes, block: int = 4096) -> float:
    """The share of ``old``'s aligned blocks found anywhere in ``new`` (what a CAS dedups)."""
    blocks = [old[i : i + block] for i in range(0, len(old) - block + 1, block)]
    return sum(new.find(piece) >= 0 for piece in blocks) / len(blocks)


def test_a_row_inserted_in_a_big_file_leaves_most_of_its_pages_as_they_were(
    tmp_path: Path,
) -> None:
    rng = random.Random(0)
    words = [f"w{i}" for i in range(5000)]
    texts = [" ".join(rng.choices(words, k=rng.randrange(5, 30))) for _ in range(50_000)]
    before = pa.table({"id": range(len(texts)), "text": texts})
    after = pa.concat_tables(
        [before.slice(0, 10), pa.table({"id": [-1], "text": ["new"]}), before.slice(10)]
    )

    def write(table: pa.Table, name: str) -> Path:
        (shard,) = write_job(
            ShardJob((0,), (0,)),
            lambda _: [table],
            table.schema,
            str(tmp_path),
            file_name=lambda _: name,
        )
        return Path(shard.path)

    old, new = write(before, "old.parquet"), write(after, "new.parquet")

    # Content-defined chunking cuts pages where the values say: after the inserted row the
    # pages are the same bytes again (fixed-size pages would all shift: ~10% shared).
    assert _shared_blocks(old.read_bytes(), new.read_bytes()) > 0.6
    assert pq.read_table(old) == before
    assert pq.read_table(new) == after


@settings(max_examples=200, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 5), min_size=1, max_size=6),
    data=st.data(),
)
def test_a_mapping_in_shard_order_is_a_run_per_shard_it_takes_rows_from(
    sizes: list[int], data: st.DataObject
) -> None:
    starts = [sum(sizes[:i]) for i in range(len(sizes) + 1)]
    rows = data.draw(st.lists(st.integers(0, starts[-1] - 1), max_size=12)) if starts[-1] else []
    shard_of = [next(s for s in range(len(sizes)) if starts[s] <= r < starts[s + 1]) for r in rows]

    runs = shard_runs(pa.array(rows, pa.uint64()), starts)

    if shard_of != sorted(shard_of):  # back to an earlier shard: no run per shard keeps the order
        assert runs is None
        return
    assert runs is not None
    assert [shard for shard, _, _ in runs] == sorted(set(shard_of))
    assert [position for _, start, stop in runs for position in range(start, stop)] == list(
        range(len(rows))
    )
    for shard, start, stop in runs:
        assert set(shard_of[start:stop]) == {shard}
