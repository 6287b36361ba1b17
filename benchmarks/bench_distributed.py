"""One map over shards: local num_proc=2 vs DaskExecutor on 2 workers vs datasets num_proc=2.

Part 1, side by side in one run: ``BENCH_ROWS`` rows (default 2M) in
``BENCH_FILES`` Parquet files (default 8, one shard each), a CPU-bound Python
function (batched), each library computing from an empty cache; the Dask
cluster (a 2-worker ``LocalCluster``, one thread each) is started before the
clock starts. Ratios are against local ``num_proc=2``.

Part 2, the driver's overhead per shard: ``BENCH_TINY_SHARDS`` (default
10,000) shards of one row each, mapped on a cluster whose scheduler and
workers are separate processes (``dask scheduler`` / ``dask worker``), so the
driver process's CPU time is the driver's alone: planning, serialising,
submitting, collecting and opening each output shard. Then the same map
again (all shards in the cache: planning and opening only), the scheduler's
memory while the tasks run, and the size of what travels per task.

Run: ``.venv/bin/python benchmarks/bench_distributed.py``.
"""

from __future__ import annotations

import importlib
import json
import os
import pickle
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
WORK = Path(tempfile.mkdtemp(prefix="bench-distributed-", dir=os.environ.get("BENCH_TMP")))
os.environ["DAGSTER_DS_DISABLE_PROGRESS_BARS"] = "1"
os.environ["HF_DATASETS_DISABLE_PROGRESS_BARS"] = "1"
os.environ.setdefault("HF_DATASETS_CACHE", str(WORK / "hf-cache"))
os.environ.setdefault("DAGSTER_DS_CACHE", str(WORK / "default-cache"))
sys.path.insert(0, str(HERE))

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

ROWS = int(os.environ.get("BENCH_ROWS", 2_000_000))
FILES = int(os.environ.get("BENCH_FILES", 8))
TINY_SHARDS = int(os.environ.get("BENCH_TINY_SHARDS", 10_000))


def checksum(batch: dict[str, list[Any]]) -> dict[str, list[int]]:
    """CPU-bound Python: a polynomial hash of each text, 4 passes over it."""
    out = []
    for text in batch["text"]:
        value = 0
        for _ in range(4):
            for char in text:
                value = (value * 31 + ord(char)) % 1_000_003
        out.append(value)
    return {"checksum": out}


def plus_one(batch: dict[str, list[Any]]) -> dict[str, list[int]]:
    return {"next": [value + 1 for value in batch["id"]]}


def _files() -> list[str]:
    folder = WORK / "parquet"
    folder.mkdir()
    per_file = ROWS // FILES
    paths = []
    for index in range(FILES):
        first = index * per_file
        ids = list(range(first, first + per_file))
        table = pa.table({"id": ids, "text": [f"row {i} of the benchmark" for i in ids]})
        path = folder / f"part-{index:03d}.parquet"
        pq.write_table(table, path)
        paths.append(str(path))
    return paths


def _timed(function: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    result = function()
    return time.perf_counter() - start, result


def part_one(bench: Any) -> None:
    import datasets
    import distributed

    from dagster_ds import Dataset, load_dataset
    from dagster_ds.cache import cache_root
    from dagster_ds.distributed import DaskExecutor

    files = _files()

    def ours(folder: str, **options: Any) -> float:
        with cache_root(str(WORK / folder)):
            dataset = load_dataset("parquet", data_files=files, split="train")
            seconds, out = _timed(lambda: dataset.map(bench.checksum, batched=True, **options))
            assert len(out) == ROWS
            assert out[3]["checksum"] == bench.checksum(out[3:4])["checksum"][0]
        return seconds

    local = ours("local-cache", num_proc=2)
    started, cluster = _timed(
        lambda: distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,  # pyright: ignore[reportArgumentType]
        )
    )
    client = distributed.Client(cluster)
    # Long-lived workers have imported and run dagster_ds already; forked local workers
    # inherit the driver's warm interpreter. Warm these up with a tiny map first.
    with cache_root(str(WORK / "warm-up-cache")):
        warm, _ = _timed(
            lambda: Dataset.from_dict({"id": [1, 2], "text": ["a", "b"]}).map(
                bench.checksum, batched=True, executor=DaskExecutor(client)
            )
        )
    dask = ours("dask-cache", executor=DaskExecutor(client))
    client.close()
    cluster.close()
    anchor_data = datasets.load_dataset("parquet", data_files=files, split="train")
    anchor, _ = _timed(
        lambda: anchor_data.map(
            bench.checksum, batched=True, num_proc=2, load_from_cache_file=False
        )
    )
    print(f"\nOne map, {ROWS:,} rows in {FILES} shards, CPU-bound Python function (batched)")
    print(f"{'case':<44} {'seconds':>9} {'vs local num_proc=2':>20}")
    for case, seconds in (
        ("dagster_ds local num_proc=2", local),
        ("dagster_ds DaskExecutor, 2-worker LocalCluster", dask),
        ("datasets num_proc=2", anchor),
    ):
        print(f"{case:<44} {seconds:>9.2f} {seconds / local:>19.2f}x")
    print(
        f"(not counted above: LocalCluster start {started:.1f} s, worker warm-up map {warm:.1f} s)"
    )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _tiny_dataset(count: int) -> Any:
    """``count`` one-row shards, each a cache entry of its own."""
    from dagster_ds import Dataset
    from dagster_ds.arrow._shards import shards_fingerprint

    parts = [Dataset.from_dict({"id": [i]}) for i in range(count)]
    shards = [part._shards[0] for part in parts]  # pyright: ignore[reportPrivateUsage]
    return Dataset._from_shards(  # pyright: ignore[reportPrivateUsage]
        None,
        shards,
        fingerprint=shards_fingerprint([shard.fingerprint for shard in shards]),
        features=parts[0].features,
    )


def part_two(bench: Any) -> None:
    import distributed
    import psutil

    from dagster_ds.cache import CacheStore, cache_root
    from dagster_ds.distributed import DaskExecutor
    from dagster_ds.distributed._task import ShardManifest, ShardTask

    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    dask_bin = str(Path(sys.executable).parent / "dask")
    scheduler = subprocess.Popen(
        [dask_bin, "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    workers = subprocess.Popen(
        [dask_bin, "worker", address, "--nworkers", "2", "--nthreads", "1", "--no-dashboard"],
        env={**os.environ, "PYTHONPATH": str(HERE)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        client = distributed.Client(address, timeout=60)
        client.wait_for_workers(2, timeout=120)
        client.run(importlib.import_module, "dagster_ds.distributed._task")
        scheduler_process = psutil.Process(scheduler.pid)
        root = str(WORK / "tiny-cache")
        with cache_root(root):
            built, dataset = _timed(lambda: _tiny_dataset(TINY_SHARDS))
            executor = DaskExecutor(client)
            rss_before = scheduler_process.memory_info().rss
            peak = [rss_before]

            def run() -> Any:
                return dataset.map(bench.plus_one, batched=True, executor=executor)

            cpu = time.process_time()
            wall, out = _timed(run)
            cpu = time.process_time() - cpu
            peak.append(scheduler_process.memory_info().rss)
            assert out[TINY_SHARDS - 1]["next"] == TINY_SHARDS
            cpu_again = time.process_time()
            wall_again, _ = _timed(run)
            cpu_again = time.process_time() - cpu_again
            output_key = out._shards[0].fingerprint  # pyright: ignore[reportPrivateUsage]
            manifest = Path(CacheStore(root).entry_url(output_key), "manifest.json")
            manifest_bytes = manifest.stat().st_size
        shard = dataset._shards[0]  # pyright: ignore[reportPrivateUsage]
        task = ShardTask("0" * 32, (shard.fingerprint,), shard.fingerprint, "1" * 32, None, 0, 1)
        returned = ShardManifest("0" * 32, True, 0.01, "host:1234")
        print(
            f"\nDriver overhead, {TINY_SHARDS:,} one-row shards (scheduler and 2 workers in"
            " their own processes)"
        )
        print(f"{'case':<44} {'wall/shard':>11} {'driver CPU/shard':>17}")
        print(
            f"{'first run (every shard a task)':<44} {wall / TINY_SHARDS * 1000:>9.2f}ms"
            f" {cpu / TINY_SHARDS * 1000:>15.2f}ms"
        )
        again = "second run (every shard in the cache)"
        print(
            f"{again:<44} {wall_again / TINY_SHARDS * 1000:>9.2f}ms"
            f" {cpu_again / TINY_SHARDS * 1000:>15.2f}ms"
        )
        print(f"target: <= 5 ms per shard; counts {executor.counts}")
        print(
            f"scheduler RSS: {rss_before / 2**20:.0f} MiB before, {max(peak) / 2**20:.0f} MiB after"
            f" the run (max tasks in flight: {executor.max_tasks_in_flight or 'default'})"
        )
        print(
            f"per task: ShardTask {len(pickle.dumps(task))} B, ShardManifest"
            f" {len(pickle.dumps(returned))} B pickled; an output shard's manifest.json"
            f" {manifest_bytes} B; building the {TINY_SHARDS:,} input shards took {built:.0f} s"
        )
        client.close()
    finally:
        workers.terminate()
        scheduler.terminate()
        workers.wait(30)
        scheduler.wait(30)


def main() -> None:
    import bench_distributed as bench  # the functions as the workers see them (not __main__)

    try:
        if os.environ.get("BENCH_PARTS", "12") != "2":
            part_one(bench)
        if os.environ.get("BENCH_PARTS", "12") != "1":
            part_two(bench)
    finally:
        shutil.rmtree(WORK, ignore_errors=True)
    print(json.dumps({"rows": ROWS, "files": FILES, "tiny_shards": TINY_SHARDS}))


if __name__ == "__main__":
    main()
