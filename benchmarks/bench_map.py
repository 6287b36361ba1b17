"""Map-style transforms: dagster_ds vs datasets (and raw pyarrow), in one run.

1M rows (int64 + short string) from a local Parquet file. Measures a batched
map with a Python function and with an Arrow-vectorised function (first run,
written to the cache on disk), the same map in a new process (a cache hit),
the in-memory variant in a new process (ours hits the cache; the anchor
recomputes), filter, and shuffle + select. Run: ``make bench``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _scratch import scratch_folder  # noqa: E402

# Child processes import this module too: they must share the parent's folders.
WORK = scratch_folder("bench-map-", shared_by="BENCH_MAP_WORK")
os.environ.setdefault("DAGSTER_DS_CACHE", str(WORK / "dagster_ds-cache"))
os.environ.setdefault("HF_DATASETS_CACHE", str(WORK / "hf-cache"))
os.environ["HF_DATASETS_DISABLE_PROGRESS_BARS"] = "1"
os.environ["DAGSTER_DS_DISABLE_PROGRESS_BARS"] = "1"

import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from _timing import best_of, report  # noqa: E402

ROWS = 1_000_000
PARQUET = WORK / "rows.parquet"


def add_length(batch: dict[str, list]) -> dict[str, list]:
    """The Python function both libraries map (batched)."""
    return {"length": [len(text) for text in batch["text"]]}


def add_one_arrow(table: pa.Table) -> pa.Table:
    """The Arrow-vectorised function both libraries map (format "arrow")."""
    return table.append_column("next", pc.add(table.column("id"), 1))


def keep_even(batch: dict[str, list]) -> list[bool]:
    """The batched predicate both libraries filter with."""
    return [value % 2 == 0 for value in batch["id"]]


def _source() -> dict[str, list]:
    return {"id": list(range(ROWS)), "text": [f"row {i % 1000}" for i in range(ROWS)]}


def _child(library: str, variant: str) -> float:
    """Seconds the map call takes in a fresh process (imports and loading excluded)."""
    code = f"""
import json, sys, time
sys.path.insert(0, {str(HERE)!r})
import bench_map as b
files = {str(PARQUET)!r}
if {library!r} == "ours":
    from dagster_ds import Dataset, load_dataset
    if {variant!r} == "disk":
        ds = load_dataset("parquet", data_files=files, split="train")
    else:
        ds = Dataset.from_dict(b._source())
else:
    import datasets
    if {variant!r} == "disk":
        ds = datasets.load_dataset("parquet", data_files=files, split="train")
    else:
        ds = datasets.Dataset.from_dict(b._source())
start = time.perf_counter()
out = ds.map(b.add_length, batched=True)
assert out[5]["length"] == 5
print(json.dumps(time.perf_counter() - start))
"""
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    return float(json.loads(completed.stdout.strip().splitlines()[-1]))


def main() -> None:
    import bench_map as b  # the functions as the child processes see them (not __main__)
    import datasets

    from dagster_ds import load_dataset

    pq.write_table(pa.table(_source()), PARQUET)
    ours = load_dataset("parquet", data_files=str(PARQUET), split="train")
    anchor = datasets.load_dataset("parquet", data_files=str(PARQUET), split="train")
    table = pq.read_table(PARQUET)

    def raw_python_map() -> None:
        for batch in table.to_batches(1000):
            pa.table(add_length(batch.to_pydict()))

    rows = []

    def first_run(dataset: object, function: object) -> float:
        """Seconds of one map that recomputes (and writes its output to the cache)."""
        start = time.perf_counter()
        dataset.map(function, batched=True, load_from_cache_file=False)  # type: ignore[attr-defined]
        return time.perf_counter() - start

    # Best of 3, alternating ours, the anchor and raw: the machine is shared.
    timings: dict[str, list[float]] = {"ours": [], "anchor": [], "raw": []}
    for _ in range(3):
        timings["ours"].append(first_run(ours, b.add_length))
        timings["anchor"].append(first_run(anchor, b.add_length))
        timings["raw"].append(best_of(raw_python_map, 1))
    rows.append(
        (
            "map, Python, first run (disk)",
            min(timings["anchor"]),
            min(timings["ours"]),
            min(timings["raw"]),
        )
    )

    ours_arrow = min(first_run(ours.with_format("arrow"), b.add_one_arrow) for _ in range(3))
    anchor_arrow = min(first_run(anchor.with_format("arrow"), b.add_one_arrow) for _ in range(3))
    raw_arrow = best_of(lambda: add_one_arrow(table), 3)
    rows.append(("map, Arrow-vectorised, first run", anchor_arrow, ours_arrow, raw_arrow))

    hit = ("same map, new process (cache hit)", _child("anchor", "disk"), _child("ours", "disk"))
    rows.append((*hit, None))
    _child("ours", "memory")
    rows.append(
        ("in-memory map, new process", _child("anchor", "memory"), _child("ours", "memory"), None)
    )

    start = time.perf_counter()
    ours.filter(b.keep_even, batched=True)
    ours_filter = time.perf_counter() - start
    start = time.perf_counter()
    anchor.filter(b.keep_even, batched=True)
    anchor_filter = time.perf_counter() - start
    raw_filter = best_of(
        lambda: table.filter(pc.equal(pc.bit_wise_and(table.column("id"), 1), pa.scalar(0))), 3
    )
    rows.append(("filter, Python predicate, first run", anchor_filter, ours_filter, raw_filter))

    ours_shuffle = best_of(
        lambda: ours.shuffle(seed=0, load_from_cache_file=False).select(range(1000)), 3
    )
    anchor_shuffle = best_of(
        lambda: anchor.shuffle(seed=0, load_from_cache_file=False).select(range(1000)), 3
    )
    shuffled = ours.shuffle(seed=0).select(range(1000))
    assert shuffled.data.num_rows == ours.data.num_rows, "shuffle + select must not copy data"
    rows.append(("shuffle + select (no copy)", anchor_shuffle, ours_shuffle, None))

    report(f"Dataset transforms on {ROWS:,} rows", rows)


if __name__ == "__main__":
    main()
