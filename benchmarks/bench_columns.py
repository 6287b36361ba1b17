"""A label correction: reuse by read columns against a full recompute and the anchor.

A text dataset of ``BENCH_COLUMNS_MB`` (default 1000) MB in 20 Parquet files
(``text``, ``label``), through three batched maps: ``n_chars`` reads only
``text``, ``label_name`` only ``label``, ``tagged`` both. After a first run, the
labels of 1% of the rows of 1 of the 20 files are corrected, and the same
pipeline runs again in a new process:

- dagster_ds (refresh): 19 shards hit by their key; on the corrected one,
  ``n_chars`` is reused by its read columns (``text`` is unchanged) and the two
  label maps run;
- dagster_ds (full recompute): the same pipeline into an empty cache;
- datasets: the data files' fingerprint changes, so it maps everything again.

Printed: the rows each function was called on (a side-effect counter), and
wall-clock time side by side. Targets (issue 26): the refresh recomputes at
most 5% of the rows and takes at most 10% of the full recompute's time.
Run: ``.venv/bin/python benchmarks/bench_columns.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
if "BENCH_COLUMNS_WORK" not in os.environ:  # child processes share the parent's folder
    os.environ["BENCH_COLUMNS_WORK"] = tempfile.mkdtemp(prefix="bench-cols-")
WORK = Path(os.environ["BENCH_COLUMNS_WORK"])
os.environ["HF_DATASETS_DISABLE_PROGRESS_BARS"] = "1"
os.environ["DAGSTER_DS_DISABLE_PROGRESS_BARS"] = "1"
sys.path.insert(0, str(HERE))

import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

FILES = 20
MEGABYTES = int(os.environ.get("BENCH_COLUMNS_MB", "1000"))
TEXT_BYTES = 200  # per row
DATA = WORK / "data"
COUNTER = WORK / "calls.txt"


def _note(name: str, rows: int) -> None:
    with COUNTER.open("a") as counter:
        counter.write(f"{name} {rows}\n")


def n_chars(batch: dict[str, list]) -> dict[str, list]:
    """Reads only ``text``."""
    _note("n_chars", len(batch["text"]))
    return {"n_chars": [len(text) for text in batch["text"]]}


def label_name(batch: dict[str, list]) -> dict[str, list]:
    """Reads only ``label``."""
    _note("label_name", len(batch["label"]))
    return {"label_name": ["positive" if label else "negative" for label in batch["label"]]}


def tagged(batch: dict[str, list]) -> dict[str, list]:
    """Reads ``text`` and ``label``."""
    _note("tagged", len(batch["label"]))
    return {
        "tagged": [
            f"{label}:{text[:8]}" for text, label in zip(batch["text"], batch["label"], strict=True)
        ]
    }


def _write_files() -> int:
    rows = MEGABYTES * 1_000_000 // TEXT_BYTES // FILES
    word = "lorem ipsum dolor sit amet "
    text = (word * (TEXT_BYTES // len(word) + 1))[:TEXT_BYTES]
    DATA.mkdir(parents=True, exist_ok=True)
    for index in range(FILES):
        texts = pa.array([f"{index}-{row} {text}" for row in range(rows)], pa.large_string())
        labels = pa.array([row % 2 for row in range(rows)], pa.int64())
        pq.write_table(
            pa.table({"text": texts, "label": labels}), DATA / f"part-{index:02d}.parquet"
        )
    return rows


def _correct_labels(rows: int) -> None:
    """Flip the label of 1% of the rows of file 7."""
    path = DATA / "part-07.parquet"
    table = pq.read_table(path)
    flip = pa.array([row % 100 == 0 for row in range(rows)])
    labels = pc.if_else(flip, pc.subtract(1, table.column("label")), table.column("label"))
    pq.write_table(table.set_column(1, "label", labels), path)


def _run(library: str, cache: Path) -> tuple[float, dict[str, int]]:
    """Seconds of load + three maps in a new process (imports excluded), and the rows each
    function got."""
    COUNTER.unlink(missing_ok=True)
    code = f"""
import json, sys, time
sys.path.insert(0, {str(HERE)!r})
import bench_columns as b
files = sorted(str(p) for p in b.DATA.glob("*.parquet"))
if {library!r} == "ours":
    from dagster_ds import load_dataset
    start = time.perf_counter()
    ds = load_dataset("parquet", data_files=files, split="train", shard_bytes=0)
else:
    import datasets
    start = time.perf_counter()
    ds = datasets.load_dataset("parquet", data_files=files, split="train")
for function in (b.n_chars, b.label_name, b.tagged):
    ds = ds.map(function, batched=True)
print(json.dumps(time.perf_counter() - start))
"""
    env = {**os.environ, "DAGSTER_DS_CACHE": str(cache / "ours"), "HF_DATASETS_CACHE": str(cache)}
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    seconds = float(json.loads(completed.stdout.strip().splitlines()[-1]))
    calls: dict[str, int] = {}
    if COUNTER.exists():
        for line in COUNTER.read_text().splitlines():
            name, rows = line.split()
            calls[name] = calls.get(name, 0) + int(rows)
    return seconds, calls


def main() -> None:
    rows = _write_files()
    total = rows * FILES
    print(f"{MEGABYTES} MB of text: {FILES} files of {rows:,} rows; three batched maps")
    first, _ = _run("ours", WORK / "cache")
    _run("anchor", WORK / "cache")
    _correct_labels(rows)
    refresh, calls = _run("ours", WORK / "cache")
    full, full_calls = _run("ours", WORK / "cold-cache")
    anchor, anchor_calls = _run("anchor", WORK / "cache")
    print(
        f"\n{'case':<34} {'seconds':>9} {'rows recomputed (of ' + format(total * 3, ',') + ')':>34}"
    )
    for case, seconds, counted in (
        ("dagster_ds, first run", first, None),
        ("dagster_ds, refresh after the fix", refresh, calls),
        ("dagster_ds, full recompute", full, full_calls),
        ("datasets, after the fix", anchor, anchor_calls),
    ):
        recomputed = "-" if counted is None else f"{sum(counted.values()):,} {counted}"
        print(f"{case:<34} {seconds:>9.2f} {recomputed:>34}")
    share = sum(calls.values()) / (total * 3)
    print(f"\nrefresh: {share:.1%} of the rows recomputed (target <= 5%), ", end="")
    print(f"{refresh / full:.1%} of the full recompute's time (target <= 10%), ", end="")
    print(f"{anchor / refresh:.1f}x faster than datasets")


if __name__ == "__main__":
    main()
