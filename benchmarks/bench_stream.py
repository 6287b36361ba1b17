"""Streaming speed: dagster_ds vs datasets streaming vs raw pyarrow, in one process.

Run with ``make bench`` (or ``python benchmarks/bench_stream.py``). A 1M-row local
Parquet file is streamed per example, in batches (Python and Arrow formats), through
``shuffle(buffer_size=10_000)``, and through a per-example ``map`` + ``filter``. The
``raw`` column is ``pyarrow.parquet.ParquetFile.iter_batches`` (with ``to_pylist`` /
``to_pydict`` where Python objects are produced, and the same Python functions for
map + filter): the floor any Arrow-backed reader pays.

Targets (issue 4): per-example iteration at least 10x the anchor and at least half the
raw speed; Arrow-format batched iteration within 1.2x of raw ``iter_batches``.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
from collections.abc import Callable, Iterable
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
os.environ.setdefault("HF_DATASETS_CACHE", tempfile.mkdtemp())
os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
from _timing import best_of

from dagster_ds import load_dataset

ROWS = 1_000_000
BATCH = 1000

_Case = tuple[str, Callable[[Any], Iterable[Any]], Callable[[], Iterable[Any]] | None]

datasets.config.SLEEP_TIME_ON_THREADS_SHUTDOWN = 0  # pyright: ignore[reportAttributeAccessIssue]


def _write(path: str) -> None:
    table = pa.table(
        {
            "id": pa.array(range(ROWS), pa.int64()),
            "text": pa.array([f"row number {i} of the benchmark" for i in range(ROWS)]),
            "score": pa.array([i * 0.5 for i in range(ROWS)], pa.float64()),
        }
    )
    pq.write_table(table, path, row_group_size=100_000)


def _consume(items: Iterable[Any]) -> int:
    count = 0
    for _ in items:
        count += 1
    return count


def _length(example: dict[str, Any]) -> dict[str, Any]:
    return {"length": len(example["text"])}


def _keep(example: dict[str, Any]) -> bool:
    return example["id"] % 3 != 0


def _raw_rows(path: str) -> Iterable[dict[str, Any]]:
    for batch in pq.ParquetFile(path).iter_batches():
        yield from batch.to_pylist()


def _raw_map_filter(path: str) -> Iterable[dict[str, Any]]:
    for row in _raw_rows(path):
        row.update(_length(row))
        if _keep(row):
            yield row


def main() -> None:
    folder = tempfile.mkdtemp()
    path = os.path.join(folder, "bench.parquet")
    _write(path)
    ours = load_dataset("parquet", data_files=path, split="train", streaming=True)
    theirs = datasets.load_dataset("parquet", data_files=path, split="train", streaming=True)

    cases: list[_Case] = [
        ("per example", lambda ds: ds, lambda: _raw_rows(path)),
        (
            f"iter(batch_size={BATCH}), python",
            lambda ds: ds.iter(batch_size=BATCH),
            lambda: (b.to_pydict() for b in pq.ParquetFile(path).iter_batches(batch_size=BATCH)),
        ),
        (
            f"iter(batch_size={BATCH}), arrow",
            lambda ds: ds.with_format("arrow").iter(batch_size=BATCH),
            lambda: pq.ParquetFile(path).iter_batches(batch_size=BATCH),
        ),
        (
            "shuffle(buffer_size=10_000), per example",
            lambda ds: ds.shuffle(seed=0, buffer_size=10_000),
            None,
        ),
        (
            "map + filter, per example",
            lambda ds: ds.map(_length).filter(_keep),
            lambda: _raw_map_filter(path),
        ),
    ]
    rows = []
    for name, pipeline, raw in cases:
        counts = {_consume(pipeline(ours)), _consume(pipeline(theirs))}
        assert len(counts) == 1, (name, counts)
        theirs_time = best_of(lambda pipeline=pipeline: _consume(pipeline(theirs)), 1)
        ours_times: list[float] = []
        raw_times: list[float] = []
        for _ in range(5):  # alternate, so machine noise hits both alike
            ours_times.append(best_of(lambda pipeline=pipeline: _consume(pipeline(ours)), 1))
            if raw is not None:
                raw_times.append(best_of(lambda raw=raw: _consume(raw()), 1))
        raw_time = statistics.median(raw_times) if raw_times else None
        rows.append((name, theirs_time, statistics.median(ours_times), raw_time))
    _report(rows)


def _report(rows: list[tuple[str, float, float, float | None]]) -> None:
    print(f"\nStreaming a {ROWS:,}-row Parquet file (median of 5 runs; anchor: one run)")
    header = f"{'case':<42} {'datasets':>10} {'dagster_ds':>11} {'raw':>9} "
    print(header + f"{'anchor/ours':>12} {'raw/ours':>9}")
    for case, anchor, ours, raw in rows:
        raw_text = f"{raw:>8.2f}s" if raw is not None else f"{'-':>9}"
        speed = f"{raw / ours:>8.2f}x" if raw is not None else f"{'-':>9}"
        print(
            f"{case:<42} {anchor:>9.2f}s {ours:>10.2f}s {raw_text} {anchor / ours:>11.1f}x {speed}"
        )
    print("raw/ours: our speed as a fraction of raw pyarrow (1.0 = as fast).")


if __name__ == "__main__":
    main()
