"""Exports: written batch by batch, to one file or one per shard, in bounded memory."""

from __future__ import annotations

import gzip
import json
import random
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from dagster_ds import IterableDataset, load_dataset
from dagster_ds.errors import InvalidArgumentError, SchemaMismatchError
from tests.conftest import REPO_ROOT

from .conftest import numbers


def test_to_parquet_json_csv_write_every_row(tmp_path: Path) -> None:
    ds = numbers(2500, num_shards=3).filter(lambda x: x["a"] % 2 == 0)
    expected = list(ds)
    written = ds.to_parquet(str(tmp_path / "out.parquet"), row_group_size=400)
    assert written == (tmp_path / "out.parquet").stat().st_size
    assert pq.read_table(tmp_path / "out.parquet").to_pylist() == expected
    assert pq.ParquetFile(tmp_path / "out.parquet").metadata.row_group(0).num_rows == 400
    ds.to_json(str(tmp_path / "out.jsonl.gz"))
    lines = gzip.decompress((tmp_path / "out.jsonl.gz").read_bytes()).decode().splitlines()
    assert [json.loads(line) for line in lines] == expected
    ds.to_csv(str(tmp_path / "out.csv"))
    back = load_dataset("csv", data_files=str(tmp_path / "out.csv"), split="train", streaming=True)
    assert [row["a"] for row in back] == [row["a"] for row in expected]


def test_one_file_per_shard(tmp_path: Path) -> None:
    ds = numbers(100, num_shards=4)
    pattern = str(tmp_path / "train-{index:05d}-of-{num_shards:05d}.parquet")
    ds.to_parquet(pattern, num_shards=4)
    names = sorted(path.name for path in tmp_path.iterdir())
    assert names == [f"train-{i:05d}-of-00004.parquet" for i in range(4)]
    parts = [pq.read_table(tmp_path / name)["a"].to_pylist() for name in names]
    assert parts == [list(range(i * 25, i * 25 + 25)) for i in range(4)]
    with pytest.raises(InvalidArgumentError, match="index"):
        ds.to_json(str(tmp_path / "no-placeholder.jsonl"), num_shards=2)


def test_batch_size_and_format_options(tmp_path: Path) -> None:
    ds = numbers(10).with_format("numpy")
    ds.to_json(str(tmp_path / "array.json"), batch_size=3, lines=False)
    assert json.loads((tmp_path / "array.json").read_text())[9] == {"a": 9, "b": "9"}


def test_a_failed_export_leaves_no_file(tmp_path: Path) -> None:
    def rows() -> Iterator[dict[str, int]]:
        yield from ({"a": i} for i in range(1500))
        raise RuntimeError("the source broke")

    target = tmp_path / "broken.parquet"
    with pytest.raises(RuntimeError, match="the source broke"):
        IterableDataset.from_generator(rows).to_parquet(str(target), row_group_size=100)
    assert not target.exists()


def test_a_batch_that_does_not_fit_the_file_is_refused(tmp_path: Path) -> None:
    def late_strings(batch: dict[str, list[int]]) -> dict[str, list[str]] | None:
        return {"a": [f"#{v}" for v in batch["a"]]} if batch["a"][0] >= 1000 else None

    ds = numbers(2000).map(late_strings, batched=True)
    with pytest.raises(SchemaMismatchError, match="does not fit the file's schema"):
        ds.to_parquet(str(tmp_path / "mixed.parquet"))


_CHILD = """
import sys
from dagster_ds import load_dataset

def length(example):
    return {"length": len(example["text"])}

def export(source, target):
    ds = load_dataset("json", data_files=source, split="train", streaming=True)
    ds = ds.map(length).filter(lambda example: example["id"] % 3 != 0)
    ds.to_parquet(target)

# VmRSS now, VmHWM this process image's own peak (Linux carries a parent's high-water
# mark over fork + exec into getrusage's ru_maxrss).
def status(name):
    with open("/proc/self/status") as lines:
        return next(int(line.split()[1]) * 1024 for line in lines if line.startswith(name))

export(sys.argv[1], sys.argv[2] + ".warm-up")  # the modules imported on first use
warm = status("VmRSS")
export(sys.argv[3], sys.argv[2])
print(status("VmHWM") - warm)
"""


def _write_jsonl_gz(path: Path, rows: int) -> int:
    """Rows of ~1.2 kB of text; returns the uncompressed size. Written in seconds."""
    rng = random.Random(0)
    pieces = [
        "".join(rng.choice("abcdefghij klmnopqrstuvwxyz") for _ in range(100)) for _ in range(64)
    ]
    size = 0
    with gzip.open(path, "wb", compresslevel=1) as stream:
        for start in range(0, rows, 20_000):
            chunk = "".join(
                f'{{"id": {i}, "text": "'
                + "".join(pieces[(i * 31 + k * 17 + (i >> k)) % 64] for k in range(12))
                + f'", "score": {i % 1000 / 10}}}\n'
                for i in range(start, min(rows, start + 20_000))
            ).encode()
            size += len(chunk)
            stream.write(chunk)
    return size


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads Linux's /proc")
def test_export_of_a_large_stream_stays_in_bounded_memory(tmp_path: Path) -> None:
    """~370 MB of JSON Lines through map and filter to Parquet, in a fresh process: the
    memory it takes beyond a warmed-up process is a fraction of the data."""
    warm_up, source = tmp_path / "small.jsonl.gz", tmp_path / "big.jsonl.gz"
    target = tmp_path / "out.parquet"
    _write_jsonl_gz(warm_up, 100)
    data_size = _write_jsonl_gz(source, 300_000)
    assert data_size > 350e6
    completed = subprocess.run(
        [
            sys.executable,
            "-c",
            textwrap.dedent(_CHILD),
            str(warm_up),
            str(target),
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert completed.returncode == 0, completed.stderr
    grown = int(completed.stdout.strip())
    print(f"working set {grown / 1e6:.0f} MB for {data_size / 1e6:.0f} MB")
    assert pq.ParquetFile(target).metadata.num_rows == 200_000
    # The stream never sits in memory: a row group being written and a few batches.
    assert grown < data_size / 3, f"working set {grown / 1e6:.0f} MB for {data_size / 1e6:.0f} MB"
