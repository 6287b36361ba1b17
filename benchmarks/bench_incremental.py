"""Incremental refresh: append 1 of 100 files, then load + map again, in one run.

100 JSON Lines files of 10,000 rows (text), a batched map with a Python
function. After the first full run, one file is appended and the same load +
map runs again:

- dagster_ds (incremental): one shard per file, so only the new file is read
  and mapped; the other 100 shards come from the cache. The in-process memo of
  file digests is cleared first, as in a new process (every file is hashed);
- dagster_ds (full recompute): the same files into an empty cache;
- datasets: its fingerprint of the data files changes, so it reads and maps all;
- raw pyarrow: read all the files and run the function over every batch.

Our refreshes and full recomputes, and raw pyarrow, run three times each (every
further refresh appends one more file) and keep their fastest time, as the
machine is shared; wall-clock and CPU time are both shown (CPU time is what other
processes' load disturbs least). Also printed: the bytes each cache holds after the first run
and what the first refresh added, and the bytes a map adding one int column stores for a text
dataset of ``BENCH_INCREMENTAL_TEXT_MB`` (default 200) MB. Run: ``make bench``.
"""

from __future__ import annotations

import gc
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORK = Path(tempfile.mkdtemp(prefix="bench-incremental-"))
os.environ["HF_DATASETS_CACHE"] = str(WORK / "hf-cache")
os.environ["HF_DATASETS_DISABLE_PROGRESS_BARS"] = "1"
os.environ["DAGSTER_DS_DISABLE_PROGRESS_BARS"] = "1"
sys.path.insert(0, str(HERE))

import pyarrow as pa  # noqa: E402
import pyarrow.json as pajson  # noqa: E402

FILES = 100
ROWS = 10_000
TEXT_MB = int(os.environ.get("BENCH_INCREMENTAL_TEXT_MB", "200"))
ROUNDS = 3  # refreshes and full recomputes, each keeping its fastest


def measure(batch: dict[str, list]) -> dict[str, list]:
    """The Python function every side maps (batched)."""
    return {"words": [len(text.split()) for text in batch["text"]]}


def _write(folder: Path, index: int, rows: int = ROWS) -> None:
    lines = (
        json.dumps({"id": index * rows + row, "text": f"file {index} row {row} " * (1 + row % 4)})
        for row in range(rows)
    )
    (folder / f"part-{index:04d}.jsonl").write_text("\n".join(lines) + "\n")


def _size(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def _timed(function: Callable[[], object]) -> tuple[float, float]:
    """(wall-clock, CPU) seconds of ``function()``: CPU time is what other load disturbs least."""
    wall, cpu = time.perf_counter(), time.process_time()
    function()
    return time.perf_counter() - wall, time.process_time() - cpu


def _fastest(*timings: tuple[float, float]) -> tuple[float, float]:
    return min(wall for wall, _ in timings), min(cpu for _, cpu in timings)


def _ours(pattern: str, cache: Path) -> None:
    from dagster_ds import load_dataset
    from dagster_ds.cache import cache_root

    with cache_root(str(cache)):
        load_dataset("json", data_files=pattern, split="train").map(measure, batched=True)


def _anchor(pattern: str) -> None:
    import datasets

    datasets.load_dataset("json", data_files=pattern, split="train").map(measure, batched=True)


def _raw(folder: Path) -> None:
    for path in sorted(folder.glob("*.jsonl")):
        table = pajson.read_json(path)
        for batch in table.to_batches(1000):
            measure({"text": batch.column("text").to_pylist()})


def _forget_file_digests() -> None:
    from dagster_ds.formats import _fingerprint

    _fingerprint._memo.clear()  # pyright: ignore[reportPrivateUsage]


def _column_bytes(megabytes: int) -> tuple[int, int]:
    """(bytes of the text dataset, bytes a map adding one int64 column stored)."""
    from dagster_ds import Dataset
    from dagster_ds.cache import CacheStore, cache_root

    rows = megabytes * 1_000_000 // 120
    text = pa.array([("x" * 100) + str(i) for i in range(rows)])
    with cache_root(str(WORK / "columns")):
        base = Dataset(pa.table({"text": text})).flatten_indices()  # the text, a cache entry
        before = sum(info.size for info in CacheStore().ls())
        base.map(lambda batch: {"length": [len(t) for t in batch["text"]]}, batched=True)
        after = sum(info.size for info in CacheStore().ls())
    return before, after - before


def main() -> None:
    import datasets

    import dagster_ds

    del datasets, dagster_ds  # imported here, so import time is in neither figure
    # What the imports allocated stays out of the collector's way: otherwise every
    # full collection during the timings walks torch's and pandas' objects too.
    gc.freeze()
    source = WORK / "source"
    source.mkdir()
    for index in range(FILES):
        _write(source, index)
    pattern = str(source / "*.jsonl")
    ours_cache = WORK / "ours"

    first_ours = _timed(lambda: _ours(pattern, ours_cache))
    first_anchor = _timed(lambda: _anchor(pattern))
    stored_ours, stored_anchor = _size(ours_cache), _size(WORK / "hf-cache")

    _write(source, FILES)  # the 101st file
    _forget_file_digests()
    refresh_ours = _timed(lambda: _ours(pattern, ours_cache))
    added_ours = _size(ours_cache) - stored_ours
    refresh_anchor = _timed(lambda: _anchor(pattern))
    added_anchor = _size(WORK / "hf-cache") - stored_anchor
    # The machine is shared: each case also runs again and keeps its fastest time. A
    # further refresh appends one more file, so each round recomputes one file.
    for extra in range(1, ROUNDS):
        _write(source, FILES + extra)
        _forget_file_digests()
        refresh_ours = _fastest(refresh_ours, _timed(lambda: _ours(pattern, ours_cache)))
    full_ours = raw = (float("inf"), float("inf"))
    for round_ in range(ROUNDS):
        _forget_file_digests()
        empty = WORK / f"full-{round_}"
        full_ours = _fastest(full_ours, _timed(lambda empty=empty: _ours(pattern, empty)))
        raw = _fastest(raw, _timed(lambda: _raw(source)))

    print(f"\nIncremental refresh: {FILES} files x {ROWS} rows, then 1 appended (one process)")
    print(f"{'case':<40} {'wall':>8} {'vs our full':>12} {'CPU':>8} {'vs our full':>12}")
    for case, (wall, cpu) in (
        ("first run, dagster_ds", first_ours),
        ("first run, datasets", first_anchor),
        ("refresh, dagster_ds (incremental)", refresh_ours),
        ("refresh, dagster_ds (full recompute)", full_ours),
        ("refresh, datasets (recomputes all)", refresh_anchor),
        ("raw pyarrow over all the files", raw),
    ):
        print(
            f"{case:<40} {wall:>7.3f}s {wall / full_ours[0]:>11.1%} "
            f"{cpu:>7.3f}s {cpu / full_ours[1]:>11.1%}"
        )
    print(f"\n{'storage':<40} {'bytes':>12} {'refresh adds':>13}")
    print(f"{'dagster_ds cache':<40} {stored_ours:>12,} {added_ours / stored_ours:>12.1%}")
    print(f"{'datasets cache':<40} {stored_anchor:>12,} {added_anchor / stored_anchor:>12.1%}")
    print(
        f"\nrefresh / full recompute: {refresh_ours[0] / full_ours[0]:.1%} wall, "
        f"{refresh_ours[1] / full_ours[1]:.1%} CPU (target <= 5%); "
        f"storage per refresh: +{added_ours / stored_ours:.1%} (target <= 5%)"
    )
    text_bytes, column_bytes = _column_bytes(TEXT_MB)
    print(
        f"map adding one int64 column to {text_bytes / 1e6:,.0f} MB of text stores "
        f"{column_bytes / 1e6:,.1f} MB ({column_bytes / text_bytes:.1%})"
    )
    shutil.rmtree(WORK, ignore_errors=True)


if __name__ == "__main__":
    main()
