"""What a map's first run costs here against another tree: bench_map's map, measured by load.

Issue 26's target: recording reads and column fingerprints adds at most 3% to
`bench_map.py`'s first run. On a shared machine wall-clock (and even CPU)
times of a 0.1 s map vary by tens of percent, so this compares two source trees
(this one, and ``BENCH_MAP_COST_AGAINST``: say a worktree of the commit before
issue 26) in two ways, each child a new process over the same 1M-row Parquet
file loaded from the cache (its conversion is not counted):

- CPU seconds of the map in the child, over ``BENCH_MAP_COST_ROUNDS`` (default
  16) alternating rounds of 5 maps each (``load_from_cache_file=False``, as
  bench_map's first run): the first map of each child and the median of its
  five; mean, median, spread;
- with valgrind installed, instructions (cachegrind's I refs, independent of
  load): children running the map 0, 1 and 3 times give one map's count
  ((3 - 1) / 2) and the first map's in a process (1 - 0).

pandas is imported before the maps, as in bench_map's process (the anchor
imports it). Run: ``BENCH_MAP_COST_AGAINST=/work/old .venv/bin/python
benchmarks/bench_map_cost.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from _scratch import scratch_folder
from _timing import counts_instructions, instructions

HERE = Path(__file__).resolve().parent
TREES = {"against": os.environ.get("BENCH_MAP_COST_AGAINST", ""), "this": str(HERE.parent)}
ROUNDS = int(os.environ.get("BENCH_MAP_COST_ROUNDS", "16"))
WORK = scratch_folder("bench-map-cost-")
PARQUET = WORK / "rows.parquet"
os.environ["BENCH_MAP_WORK"] = str(WORK)  # bench_map, imported by every child, makes none


def _code(maps: int) -> str:
    return f"""
import json, sys, time
sys.path.insert(0, {str(HERE)!r})
import pandas, pyarrow.pandas_compat
import bench_map as b
from dagster_ds import load_dataset
ds = load_dataset("parquet", data_files={str(PARQUET)!r}, split="train")
seconds = []
for _ in range({maps}):
    start = time.process_time()
    ds.map(b.add_length, batched=True, load_from_cache_file=False)
    seconds.append(time.process_time() - start)
print(json.dumps(seconds))
"""


def _env(tree: str, cache: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": tree,
        "DAGSTER_DS_CACHE": str(cache),
        "DAGSTER_DS_DISABLE_PROGRESS_BARS": "1",
        "PYTHONHASHSEED": "0",
    }


def _cpu(tree: str) -> list[float]:
    """CPU seconds of 5 maps in a new process (the file's load from the cache not counted)."""
    cache = WORK / "cpu-cache"
    shutil.rmtree(cache, ignore_errors=True)
    done = subprocess.run(
        [sys.executable, "-c", _code(5)],
        capture_output=True,
        text=True,
        check=True,
        env=_env(tree, cache),
    )
    return json.loads(done.stdout.splitlines()[-1])


def _instructions(job: tuple[str, int]) -> tuple[tuple[str, int], int]:
    """Instructions of a process that loads the file (a cache hit) and maps it ``maps`` times."""
    name, maps = job
    cache = WORK / f"cache-{name}-{maps}"
    env = _env(TREES[name], cache)  # the file converted into it first: loads are hits
    subprocess.run([sys.executable, "-c", _code(0)], capture_output=True, check=True, env=env)
    return job, instructions([sys.executable, "-c", _code(maps)], env)[0]


def _summary(values: list[float]) -> str:
    spread = f"{min(values) * 1000:.0f}-{max(values) * 1000:.0f} ms"
    return (
        f"mean {statistics.mean(values) * 1000:6.1f} ms, median "
        f"{statistics.median(values) * 1000:6.1f} ms, range {spread}, "
        f"sd {statistics.stdev(values) * 1000:.1f} ms"
    )


def main() -> None:
    import bench_map as b
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not TREES["against"]:
        raise SystemExit("set BENCH_MAP_COST_AGAINST to the source tree to compare with")
    pq.write_table(pa.table(b._source()), PARQUET)  # pyright: ignore[reportPrivateUsage]
    runs: dict[str, list[list[float]]] = {"against": [], "this": []}
    for round_ in range(ROUNDS):  # alternating, each side first in every other round
        for name in ("against", "this") if round_ % 2 == 0 else ("this", "against"):
            runs[name].append(_cpu(TREES[name]))
    print(f"bench_map's map (1M rows), CPU of the map in a child, {ROUNDS} alternating rounds")
    picks: dict[str, Callable[[list[float]], float]] = {
        "first map of a process": lambda maps: maps[0],
        "median of its 5 maps": statistics.median,
    }
    for label, pick in picks.items():
        against = [pick(maps) for maps in runs["against"]]
        this = [pick(maps) for maps in runs["this"]]
        print(f"  {label}:\n    against {_summary(against)}\n    this    {_summary(this)}")
        print(
            f"    this/against: mean {statistics.mean(this) / statistics.mean(against) - 1:+.1%},"
            f" median {statistics.median(this) / statistics.median(against) - 1:+.1%}"
        )
    if not counts_instructions():
        print("(valgrind is not installed: no instruction counts)")
    else:
        jobs = [(name, maps) for maps in (0, 1, 3) for name in TREES]
        with ThreadPoolExecutor(2) as pool:
            counts = dict(pool.map(_instructions, jobs))
        one = {name: (counts[name, 3] - counts[name, 1]) / 2 for name in TREES}
        first = {name: counts[name, 1] - counts[name, 0] for name in TREES}
        print("instructions (cachegrind I refs):")
        for name in TREES:
            one_map, first_map = one[name] / 1e6, first[name] / 1e6
            print(f"  {name:<8} one map {one_map:,.1f} M, first map {first_map:,.1f} M")
        print(
            f"  this/against: one map {one['this'] / one['against'] - 1:+.2%},"
            f" first map {first['this'] / first['against'] - 1:+.2%}"
        )


if __name__ == "__main__":
    main()
