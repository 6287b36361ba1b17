"""Driver memory of a first materialization: one shard at a time, on local disk and on S3.

Each run is a process of its own (`_memory_child`) whose peak resident set (VmHWM,
reset after its imports) is compared between a source of 2 and of 4 files of
`FILE_BYTES` each, a shard each: a driver that holds one shard at a time peaks
at the same height whatever the number of shards.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.conftest import AWS_TEST_ENV, REPO_ROOT, new_dagster_home

FILE_BYTES = 48 << 20
TEXT_BYTES = 1000
MB = 1 << 20


def _write_source(folder: Path, files: int) -> str:
    """``files`` uncompressed Parquet files of one row group each (random 1 kB texts)."""
    folder.mkdir()
    random = np.random.default_rng(26)
    rows = FILE_BYTES // (TEXT_BYTES + 8)
    offsets = pa.py_buffer((np.arange(rows + 1, dtype=np.int32) * TEXT_BYTES).tobytes())
    for index in range(files):
        letters = random.integers(97, 123, size=rows * TEXT_BYTES, dtype=np.uint8)
        text = pa.StringArray.from_buffers(rows, offsets, pa.py_buffer(letters.tobytes()))
        ids = pa.array(np.arange(index * rows, (index + 1) * rows, dtype=np.int64))
        pq.write_table(
            pa.table({"id": ids, "text": text}),
            folder / f"part-{index:05d}.parquet",
            compression="none",
            use_dictionary=False,
        )
    return str(folder / "*.parquet")


def _peak(files: str, base_dir: str, home: Path, **env: str) -> int:
    """The peak resident set of a first materialization, in a new process, in bytes."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.orchestration._memory_child", files, base_dir],
        cwd=REPO_ROOT,
        env={**os.environ, "DAGSTER_HOME": str(home), "PYTHONPATH": str(REPO_ROOT), **env},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return int(json.loads(done.stdout.strip().splitlines()[-1])["peak"])


@pytest.mark.slow
@pytest.mark.parametrize("where", ["local disk", "s3"])
def test_a_first_materialization_holds_one_shard_at_a_time(
    where: str, tmp_path: Path, dagster_homes: Path, request: pytest.FixtureRequest
) -> None:
    peaks: dict[int, int] = {}
    for files in (2, 4):
        source = _write_source(tmp_path / f"source-{files}", files)
        home = new_dagster_home(dagster_homes)
        if where == "s3":
            endpoint = request.getfixturevalue("s3_endpoint")
            store, cache = f"s3://datasets/store-{files}", f"s3://datasets/cache-{files}"
            env = {**AWS_TEST_ENV, "AWS_ENDPOINT_URL_S3": endpoint}
        else:
            store, cache, env = (
                str(tmp_path / f"store-{files}"),
                str(tmp_path / f"cache-{files}"),
                {},
            )
        peaks[files] = _peak(source, store, home, DAGSTER_DS_CACHE=cache, **env)
    one, two = peaks[2] / MB, peaks[4] / MB
    # Twice the shards, about the same peak: holding every shard, as before, grew it by
    # 22 % locally (434 -> 530 MB) and 16 % on S3 (559 -> 651 MB); one at a time, it moved
    # by -10 % to +7 % over runs (the rest is the run's own memory, which varies by ~50 MB).
    assert two < 1.15 * one, f"peak {one:.0f} MB with 2 shards, {two:.0f} MB with 4"
    # And well under what holding them took on S3 (the 1 GB figure is bench_scale's).
    assert max(one, two) < 600, f"peak {one:.0f} MB with 2 shards, {two:.0f} MB with 4"
